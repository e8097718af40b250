"""Texts: TF-IDF views, frozen MiniLM embeddings and MiniLM fine-tuning.

May import: networks, base.
"""

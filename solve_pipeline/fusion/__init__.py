"""The late-fusion network of the Agent K paper and the pretrained embeddings it reads.

May import: texts, images, sound, networks, base.
"""

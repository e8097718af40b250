"""Images: grey pixel grids, pretrained backbones (bundled or the user's own), frozen embeddings and fine-tuning.

May import: networks, base.
"""

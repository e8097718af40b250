"""Images: grey pixel grids, pretrained backbones (bundled or the user's own), frozen embeddings (and their
replay on unseen pictures, for a predictor) and fine-tuning.

May import: networks, base.
"""

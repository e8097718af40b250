"""The late-fusion network of the Agent K paper and the pretrained embeddings it reads (photos, texts,
and sound clips drawn as spectrograms).

May import: texts, images, sound, networks, base.
"""

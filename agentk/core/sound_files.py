"""Sound files recognised by their first bytes, whatever their names (a clip named .bin is one, a
text named .wav is not)."""

from __future__ import annotations

from pathlib import Path

# Names sound files usually carry; a clip is still recognised by its first bytes (`audio_format`).
AUDIO_EXTENSIONS = (".wav", ".flac", ".ogg", ".oga", ".opus", ".mp3", ".aif", ".aiff", ".aifc", ".au", ".snd")
_AUDIO_MAGIC_BYTES = 12


def audio_format(head: bytes) -> str | None:
    """The container a sound file's first bytes announce (what libsndfile decodes), else None."""
    if head[:4] in (b"RIFF", b"RIFX", b"RF64") and head[8:12] == b"WAVE":
        return "wav"
    if head.startswith(b"fLaC"):
        return "flac"
    if head.startswith(b"OggS"):
        return "ogg"
    if head.startswith(b"FORM") and head[8:12] in (b"AIFF", b"AIFC"):
        return "aiff"
    if head.startswith(b".snd"):
        return "au"
    if head.startswith(b"ID3"):
        return "mp3"
    # A bare MPEG audio frame: 11 sync bits, then a valid version, layer, bitrate and sample rate.
    if len(head) >= 4 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0:
        version, layer = (head[1] >> 3) & 3, (head[1] >> 1) & 3
        bitrate, rate = head[2] >> 4, (head[2] >> 2) & 3
        if version != 1 and layer != 0 and bitrate not in (0, 15) and rate != 3:
            return "mp3"
    return None


def is_audio(path: str | Path) -> bool:
    """Whether `path` is a sound file, from its first bytes: a clip named .bin is one, a text named .wav is not."""
    try:
        with open(path, "rb") as fh:
            return audio_format(fh.read(_AUDIO_MAGIC_BYTES)) is not None
    except OSError:
        return False

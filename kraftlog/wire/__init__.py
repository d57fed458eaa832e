"""Wire layer: varints, the v2 record batch, CRC-32C and compression codecs."""

"""Vector tiers: sqlite-vec and Qdrant indexes, and the int8 quantization they share."""

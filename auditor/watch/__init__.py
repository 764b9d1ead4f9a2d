"""The watch's shared part: the metrics served over HTTP (each platform's watch is in its home)."""

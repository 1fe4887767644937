"""Packaged EC2 catalog data (gzip CSV), built by ``tools/build_catalog.py``; see SOURCES.md."""

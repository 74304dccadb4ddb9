"""The conformance vectors, generated from the living spec: the chapters' recorded calls, the
test strategies' drawn histories and hand-written hostile rows, each tagged with its rules
(`python -m livingspec.vectors export FOLDER`, `make vectors`)."""

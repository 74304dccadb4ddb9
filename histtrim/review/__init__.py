"""Design reviews: replay recorded sessions through the agent loop once per `Policy` and
compare (`replay`), run many on a process pool or a Dask cluster (`compare`), report
(`report`), explore interactively (`explorer`), and generate sessions (`synth`)."""

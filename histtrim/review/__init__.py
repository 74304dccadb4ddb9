"""Design reviews: recorded sessions (`sessions`), replayed through the agent loop once per
`Policy` (`replay`), run many on a process pool or a Dask cluster (`compare`), report
(`report`), explore interactively (`explorer`), and generate sessions (`synth`)."""

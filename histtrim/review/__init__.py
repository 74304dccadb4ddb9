"""Design reviews (`histtrim review`, the `review` extra): recorded sessions (`sessions`),
replayed through the agent loop once per `Policy` (`replay`), run many on a process pool or a
Dask cluster (`compare`), reported (`report`) and explored in Jupyter (`explorer`)."""

"""The conformance kit an implementer uses: the protocol codec (`codec`), the vectors and
their schema (`vectors`, `schema`), the runner and its report (`runner`, `report`), and
histtrim behind the protocol (`serve`, `reference`, `functions`, `scenario`). The vectors
themselves are exported by the living spec (`livingspec.vectors`)."""

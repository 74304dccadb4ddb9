"""The reference agent runtime, built on the spec modules: the turn loop and its trims
(RUN-1..3, LIMIT-1..2, SEEN-1..3, CAP-4, PAIR-4), the provider boundary, tools, the running
token ledger, and the legacy log-only path (SEEN-4)."""

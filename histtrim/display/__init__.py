"""How histories and trims are shown: HTML views for Jupyter (`views`, `page`, `pieces`) and
plain-text tables that also render as HTML (`tables`)."""

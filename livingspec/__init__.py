"""The living spec's machinery, not part of the installed `histtrim` package: what only the
notebooks, the site, CI and maintainers use (figures, example sessions, the rule index, the
conformance-vector generator, the calibration corpus, the review corpus generator and the
test strategies). It imports histtrim; nothing in histtrim imports it."""

"""How good is EST-1? The calibration corpus (generated, per content class), the measurement
against real tokenizers, and the statistics the calibration chapter reads from saved CSVs."""

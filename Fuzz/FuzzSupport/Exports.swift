// The seeded generator fuzz targets share (`Seeded.SplitMix`).
@_exported import Seeded

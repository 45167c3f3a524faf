// Everything that shows network text at a terminal also needs the type it
// comes in and its sanitizer.
@_exported import NetworkText

/// A size as people read it: `512 B`, `2.4 MB`, `1.1 GB` (decimal units, one decimal below 10).
enum FileSize {
    static func text(_ bytes: UInt64) -> String {
        let units = ["B", "kB", "MB", "GB", "TB"]
        var value = Double(bytes), unit = 0
        while value >= 1000, unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        if unit == 0 { return "\(bytes) B" }
        return value < 10 ? "\((value * 10).rounded() / 10) \(units[unit])" : "\(Int(value.rounded())) \(units[unit])"
    }
}

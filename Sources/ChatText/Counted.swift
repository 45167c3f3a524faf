/// "1 author", "2 authors": a count with its noun in the right number (issue 44: "1 authors").
public func counted(_ count: some BinaryInteger, _ noun: String, plural: String? = nil) -> String {
    "\(count) " + (count == 1 ? noun : plural ?? noun + "s")
}

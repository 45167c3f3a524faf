import Reactor

/// A plain HTTP answer whose body comes in parts (`HTTPBodyStream`): the
/// next part is asked for when less than a window waits unsent, so a large
/// file goes out at the pace the client reads, never held whole.
extension WebSocketConnection {
    /// Asks the body's stream for its next part, when one is due. Loop thread only.
    func askForPart() {
        guard case .closingAfterWrite = phase, var body = bodyStream, !body.asking,
              body.queued < body.stream.length, unsentBytes < HTTPBodyStream.window else { return }
        body.asking = true
        bodyStream = body
        loop.settle()
        body.stream.next { [self] part in loop.execute { [self] in partCame(part) } }
    }

    /// A part came (nil: the stream stopped). Loop thread only.
    private func partCame(_ part: [UInt8]?) {
        guard case .closingAfterWrite = phase, var body = bodyStream else { return }
        guard let part, !part.isEmpty, part.count <= body.stream.length - body.queued else {
            // Cut short of its Content-Length: the client sees a failed response, never a whole wrong one.
            return closeSocket(report: nil)
        }
        body.queued += part.count
        body.asking = false
        bodyStream = body.queued == body.stream.length ? nil : body
        writeBuffer.append(contentsOf: part)
        flush()
    }
}

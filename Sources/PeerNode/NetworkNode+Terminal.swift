import TermUI

extension NetworkNode {
    /// What Tab completes now: commands, known rooms, known nicks (on the loop).
    func completer() -> Completer {
        Completer(commands: ChatInput.commandNames, rooms: node.knownRooms, nicks: Array(Set(node.nicks.values)).sorted())
    }
}

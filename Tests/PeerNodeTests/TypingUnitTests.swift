import Crypto
@testable import Gossip
@testable import PeerNode
import Testing

/// The typing unit as a list of inputs and the answers it gives (issue 40):
/// what to send, pass on, count and show. It stores nothing, so no store
/// can fail under it.
@Suite("Typing: inputs and answers")
struct TypingUnitTests {
    let me = try! SigningKey.generate()  // test input
    let bob = try! SigningKey.generate()  // test input
    let room = try! RoomID(bytes: [UInt8](repeating: 7, count: RoomID.byteCount))  // test input

    @Test("ours: once per interval, again at once after a post; a draft of a command says nothing, /me and // do")
    func ours() {
        let typing = Typing(identity: me)
        #expect(typing.ours(in: room, now: 10, wall: 10_000)?.typer == me.publicKey)
        #expect(typing.ours(in: room, now: 11, wall: 11_000) == nil, "said lately")
        typing.postedOwn(in: room)
        #expect(typing.ours(in: room, now: 11.5, wall: 11_500) != nil, "a post ends our typing: the next key says so again")
        #expect(Typing.isTyping("hello") && Typing.isTyping("/me waves") && Typing.isTyping("//slash"))
        #expect(!Typing.isTyping("/join #x") && !Typing.isTyping(""))
    }

    @Test("theirs: a fresh notice is shown and passed on once; the same again is dropped; ours come back is neither; a forged signature is dropped; a forwarded one is not passed on again")
    func theirs() {
        let typing = Typing(identity: me)
        let notice = TypingNotice.sign(room: room, by: bob, time: 10_000)
        let first = typing.arrived(notice, from: 1, now: 10, wall: 10_000)
        #expect(first == Typing.Arrival(passOn: notice.forwarded, fresh: true))
        #expect(typing.typers(in: room, now: 10) == [bob.publicKey])
        #expect(typing.arrived(notice, from: 2, now: 10.1, wall: 10_100) == Typing.Arrival(dropped: true), "a replay")
        #expect(typing.arrived(TypingNotice.sign(room: room, by: me, time: 10_000), from: 1, now: 10, wall: 10_000) == Typing.Arrival())
        let later = TypingNotice.sign(room: room, by: bob, time: 12_000)
        let forged = TypingNotice(room: later.room, typer: later.typer, time: later.time, forwards: 0, signature: [UInt8](repeating: 0, count: later.signature.count))
        #expect(typing.arrived(forged, from: 1, now: 12, wall: 12_000) == Typing.Arrival(dropped: true))
        let again = typing.arrived(later.forwarded, from: 3, now: 12, wall: 12_000)
        #expect(again.passOn == nil && !again.dropped && !again.fresh, "forwarded already; bob was typing already")
        typing.posted(by: bob.publicKey, in: room, now: 12.5)
        #expect(typing.typers(in: room, now: 12.5).isEmpty, "a message ends the typing")
    }

    @Test("the prompt names up to three typers; more are several people")
    func line() {
        #expect(Typing.line([]) == "")
        #expect(Typing.line(["bob·k3fq"]) == "(bob·k3fq is typing…) ")
        #expect(Typing.line(["a", "b", "c"]) == "(a, b, c are typing…) ")
        #expect(Typing.line(["a", "b", "c", "d"]) == "(several people are typing…) ")
    }
}

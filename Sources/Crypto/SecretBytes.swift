import CSodium

/// Secret key material in memory that is zeroed (`sodium_memzero`) when the
/// last reference goes away. The bytes never change after `init`, which is
/// what makes sharing the reference between threads safe.
public final class SecretBytes: @unchecked Sendable {
    private let storage: UnsafeMutableRawBufferPointer

    private let count_: Int
    public var count: Int { count_ }

    /// `count` zero bytes, to be filled by `fill` before the value is shared.
    init(count: Int, fill: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        count_ = count
        storage = .allocate(byteCount: max(count, 1), alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        do {
            try fill(UnsafeMutableRawBufferPointer(rebasing: storage[0..<count]))
        } catch {
            sodium_memzero(storage.baseAddress, storage.count)
            storage.deallocate()
            throw error
        }
    }

    convenience init(copying bytes: some Collection<UInt8>) {
        self.init(count: bytes.count) { buffer in
            _ = buffer.initializeMemory(as: UInt8.self, from: bytes)
        }
    }

    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<count_]))
    }

    /// Constant-time comparison.
    func isEqual(to other: SecretBytes) -> Bool {
        guard count_ == other.count_ else { return false }
        return withUnsafeBytes { a in
            other.withUnsafeBytes { b in sodium_memcmp(a.baseAddress, b.baseAddress, count_) == 0 }
        }
    }

    deinit {
        sodium_memzero(storage.baseAddress, storage.count)
        storage.deallocate()
    }
}

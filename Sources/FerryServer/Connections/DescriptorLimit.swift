#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The process's open-file limit.
enum DescriptorLimit {
    /// Raises the soft limit on open files as far as the hard limit allows,
    /// and returns the limit in force.
    static func raise() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            #if canImport(Darwin)
                // Darwin refuses a soft limit above OPEN_MAX.
                raised.rlim_cur = min(limit.rlim_max, rlim_t(OPEN_MAX))
            #else
                raised.rlim_cur = limit.rlim_max
            #endif
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return Int(clamping: limit.rlim_cur)
    }
}

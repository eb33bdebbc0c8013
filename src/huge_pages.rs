//! A heap in small pages: the `troupe` binary turns transparent huge pages
//! off for its process, first thing.
//!
//! mimalloc asks the kernel for huge pages on each arena it maps
//! (`madvise(MADV_HUGEPAGE)`), and where the kernel grants them (its
//! `transparent_hugepage` setting is `madvise` or `always`) a first touch
//! anywhere in 2 MiB of heap makes all of it resident, zeroed. A server's
//! heap is many small records spread thin — sessions, runs, connections —
//! so that made most of each huge page resident for little. Measured with
//! `bench serve --k 1000` (BENCHMARKS.md, round three): 69.6 → 55.4 KiB
//! per session, peak 102 → 90 MiB, and a fifth less server CPU per
//! unstreamed user turn (fewer pages zeroed). The benchmarks' binaries, which embed the
//! runtime as a library user would, keep the allocator's default.
//!
//! It is `prctl(PR_SET_THP_DISABLE)`, through rustix (the workspace
//! forbids `unsafe`), which holds for the whole process (and children it
//! starts) from then on: pages already made huge stay so. Elsewhere than
//! Linux there is nothing to do.

/// Turns transparent huge pages off for this process, if the OS has them.
/// A failure (a kernel without the call) changes nothing but the memory
/// used, so it is ignored.
pub(crate) fn turn_off() {
    #[cfg(target_os = "linux")]
    let _ = rustix::thread::disable_transparent_huge_pages(true);
}

//! The guests' allocator: free lists by size class over a bump region.
//!
//! A guest answers one request and keeps little between requests (the
//! settings it read last), so what matters is the price of each `malloc`
//! and `free`, not fragmentation over hours: in a fresh instance, which is
//! how policy-server runs policies, every block comes from the bump region
//! and is never split or merged. A block's size class comes from the
//! `Layout` Rust passes to both `alloc` and `dealloc`, so blocks carry no
//! header: `alloc` is a pop from the class's free list or a bump, `dealloc`
//! a push, about a dozen instructions each, where wasi-libc's and the
//! `dlmalloc` crate's dlmalloc spent several times that finding, splitting
//! and coalescing chunks (BENCHMARKS.md, "Where the bundle's work goes").
//!
//! Classes are 16-byte steps up to 512 bytes, then four between each
//! power of two and the next (640, 768, 896, 1024, 1280, ...). Every
//! block is 16-byte aligned; a layout that asks for more (none in the
//! guests) is served from the bump region and never reused. Memory freed
//! into one class stays there: a warm instance holds at most the largest
//! working set each class has seen, which for an admission request is a
//! few hundred KiB.
//!
//! Where the region comes from: a component's heap is its own, from
//! `__heap_base` (inside the initial memory the guests are linked with,
//! `WASM_MEMORY` in the Makefile), growing memory only once that is used
//! up, since a growth costs the host an `mprotect` during the call and
//! another when a pooled slot is reused. A module's start-up code
//! (wasi-libc's) allocates with wasi-libc's own `malloc`, so the module
//! takes its region from that, 64 KiB at a time (which come from the same
//! initial memory first), and never hands memory back.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;

/// The smallest class and the step between small classes.
const STEP: usize = 16;
/// The largest small class; larger blocks have power-of-two sizes.
const SMALL: usize = 512;
/// Small classes, then four per power of two above `SMALL`.
const CLASSES: usize = SMALL / STEP + (usize::BITS as usize - 1 - SMALL.trailing_zeros() as usize) * 4;
/// A wasm page.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
const PAGE: usize = 65536;

/// The size class of a block of `size` bytes, and the class's block size.
#[inline(always)]
fn class(size: usize) -> (usize, usize) {
    if size <= SMALL {
        let c = size.max(1).div_ceil(STEP);
        (c - 1, c * STEP)
    } else {
        // Four classes between powers of two: 2^p < size <= 2^(p+1) is in
        // steps of 2^(p-2), so a block wastes at most a fifth.
        let p = (usize::BITS - 1 - (size - 1).leading_zeros()) as usize;
        let step = 1 << (p - 2);
        let steps = size.div_ceil(step);
        (SMALL / STEP + (p - SMALL.trailing_zeros() as usize) * 4 + steps - 5, steps * step)
    }
}

struct State {
    /// The first free block of each class; each free block's first word
    /// holds the next.
    free: [usize; CLASSES],
    /// The bump region: `start..next` is handed out, `next..end` unused.
    start: usize,
    next: usize,
    end: usize,
}

/// The allocator. Guests are single-threaded (wasm32 without threads).
pub struct Heap(UnsafeCell<State>);

// SAFETY: wasm32 guests without the threads proposal run one thread; the
// state is never reached from two at once.
unsafe impl Sync for Heap {}

impl Heap {
    /// An allocator whose region starts at the first `alloc`.
    pub const fn new() -> Heap {
        Heap(UnsafeCell::new(State { free: [0; CLASSES], start: 0, next: 0, end: 0 }))
    }
}

impl Default for Heap {
    fn default() -> Self {
        Heap::new()
    }
}

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
unsafe extern "C" {
    /// Where the linker put the end of static data: the heap starts here.
    static __heap_base: u8;
}

#[cfg(all(target_arch = "wasm32", target_os = "wasi"))]
unsafe extern "C" {
    /// wasi-libc's: its start-up code allocates with it, so in a module the
    /// region is taken from it, never from under it.
    fn aligned_alloc(align: usize, size: usize) -> *mut u8;
}

/// What a module takes from wasi-libc's allocator at a time; a block of
/// at least half this size is taken on its own.
#[cfg(all(target_arch = "wasm32", target_os = "wasi"))]
const CHUNK: usize = 64 * 1024;

impl State {
    /// `size` bytes at `align` (at least 16) from the bump region, which is
    /// refilled when it runs out; 0 when memory cannot grow.
    #[inline(never)]
    fn bump(&mut self, size: usize, align: usize) -> usize {
        let start = (self.next + align - 1) & !(align - 1);
        match start.checked_add(size) {
            Some(stop) if self.next != 0 && stop <= self.end => {
                self.next = stop;
                start
            }
            _ => self.refill(size, align),
        }
    }

    /// [`State::bump`] when the region is used up: a module takes a new
    /// chunk from wasi-libc (a large block on its own); a component, whose
    /// heap is its own, starts at `__heap_base` and grows memory.
    #[cfg(all(target_arch = "wasm32", target_os = "wasi"))]
    fn refill(&mut self, size: usize, align: usize) -> usize {
        // SAFETY: wasi-libc's `aligned_alloc`, with a power-of-two
        // alignment and a size it may refuse (null).
        if size >= CHUNK / 2 {
            return unsafe { aligned_alloc(align, size.div_ceil(align) * align) } as usize;
        }
        let chunk = unsafe { aligned_alloc(STEP.max(align), CHUNK) } as usize;
        if chunk == 0 {
            return 0;
        }
        (self.start, self.next) = (chunk, chunk);
        self.end = chunk + CHUNK;
        self.bump(size, align)
    }

    #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
    fn refill(&mut self, size: usize, align: usize) -> usize {
        if self.next == 0 {
            self.next = core::ptr::addr_of!(__heap_base) as usize;
            self.start = self.next;
            self.end = core::arch::wasm32::memory_size(0) * PAGE;
        }
        let start = (self.next + align - 1) & !(align - 1);
        let Some(stop) = start.checked_add(size) else { return 0 };
        if stop > self.end {
            let pages = (stop - self.end).div_ceil(PAGE);
            if core::arch::wasm32::memory_grow(0, pages) == usize::MAX {
                return 0;
            }
            self.end += pages * PAGE;
        }
        self.next = stop;
        start
    }

    /// Natively (the tests) the region is given, and never refilled.
    #[cfg(not(target_arch = "wasm32"))]
    fn refill(&mut self, _size: usize, _align: usize) -> usize {
        0
    }
}

// SAFETY: blocks of one class never overlap (each comes once from the bump
// region, and a freed block is handed out again only after `dealloc`
// returned it); a block of class c holds at least the sizes mapping to c,
// is 16-byte aligned, and layouts aligned beyond that get their own
// never-reused bump allocation.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Heap {
    #[inline(never)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: single-threaded (see `Sync`), and no reference to the
        // state outlives this call.
        let s = unsafe { &mut *self.0.get() };
        if layout.align() > STEP {
            return s.bump(layout.size(), layout.align()) as *mut u8;
        }
        let (c, block) = class(layout.size());
        if let Some(head) = s.free.get_mut(c).filter(|h| **h != 0) {
            let block = *head;
            // SAFETY: `block` is a free block of this class, whose first
            // word `dealloc` wrote.
            *head = unsafe { *(block as *const usize) };
            return block as *mut u8;
        }
        s.bump(block, STEP) as *mut u8
    }

    #[inline(never)]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.align() > STEP {
            return;
        }
        // SAFETY: as in `alloc`; `ptr` is a block of this layout's class,
        // at least 16 bytes, no longer in use.
        let s = unsafe { &mut *self.0.get() };
        if let Some(head) = s.free.get_mut(class(layout.size()).0) {
            unsafe { *(ptr as *mut usize) = *head };
            *head = ptr as usize;
        }
    }

    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= STEP {
            let ((from, old_block), (to, new_block)) = (class(layout.size()), class(new_size));
            if from == to {
                return ptr;
            }
            // The block last taken from the bump region (a string or list
            // being built) grows or shrinks where it is.
            // SAFETY: single-threaded, as in `alloc`.
            let s = unsafe { &mut *self.0.get() };
            let at = ptr as usize;
            // (A module's large blocks and earlier chunks lie outside the
            // region: only a block inside it can end at `next`.)
            if at >= s.start && at + old_block == s.next && at.checked_add(new_block).is_some_and(|stop| stop <= s.end) {
                s.next = at + new_block;
                return ptr;
            }
        }
        // SAFETY: the caller's contract for `realloc` is `alloc`'s and
        // `dealloc`'s; the copy stays within both blocks.
        unsafe {
            let new = self.alloc(Layout::from_size_align_unchecked(new_size, layout.align()));
            if !new.is_null() {
                core::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            new
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_hold_their_sizes_and_are_ordered() {
        let mut last = (0, STEP);
        for size in 0..=1 << 20 {
            let (c, block) = class(size);
            assert!(c < CLASSES && block >= size.max(1) && block.is_multiple_of(STEP), "{size}: {c} {block}");
            assert!(c >= last.0 && (c > last.0 || block == last.1), "{size}");
            last = (c, block);
        }
        assert_eq!(class(1), (0, 16));
        assert_eq!(class(16), (0, 16));
        assert_eq!(class(17), (1, 32));
        assert_eq!(class(512), (31, 512));
        assert_eq!(class(513), (32, 640));
        assert_eq!(class(1024), (35, 1024));
        assert_eq!(class(1025), (36, 1280));
        assert_eq!(class(1 << 31), (119, 1 << 31));
    }

    /// Blocks handed out at once never overlap, freed blocks are reused by
    /// their class, and a block keeps what was written to it.
    #[test]
    fn blocks_are_disjoint_and_reused() {
        let mut region = vec![0u128; 1 << 16];
        let heap = Heap::new();
        // SAFETY: the region outlives the heap's use of it.
        unsafe {
            let s = &mut *heap.0.get();
            s.next = region.as_mut_ptr() as usize;
            s.start = s.next;
            s.end = s.next + region.len() * 16;
        }
        let sizes = [1, 8, 16, 17, 100, 512, 513, 3000, 24, 24, 24];
        let mut live: Vec<(*mut u8, Layout)> = Vec::new();
        for round in 0..3u8 {
            for (i, &size) in sizes.iter().enumerate() {
                let layout = Layout::from_size_align(size, 8).unwrap();
                // SAFETY: a valid layout; the block is written within its size.
                let p = unsafe { heap.alloc(layout) };
                assert!(!p.is_null() && (p as usize).is_multiple_of(STEP));
                unsafe { core::ptr::write_bytes(p, round * 16 + i as u8, size) };
                live.push((p, layout));
            }
            for (i, (p, l)) in live.iter().enumerate() {
                for (j, (q, m)) in live.iter().enumerate() {
                    let (a, b) = (*p as usize, *q as usize);
                    assert!(i == j || a + l.size() <= b || b + m.size() <= a, "blocks {i} and {j} overlap");
                }
            }
            let before = unsafe { (*heap.0.get()).next };
            // Free every other block, and allocate them again: the bump
            // region does not move.
            let freed: Vec<_> = live.iter().copied().step_by(2).collect();
            live = live.iter().copied().skip(1).step_by(2).collect();
            for (p, l) in &freed {
                unsafe { heap.dealloc(*p, *l) };
            }
            for (p, l) in &freed {
                let q = unsafe { heap.alloc(*l) };
                assert!(freed.iter().any(|(f, _)| *f == q), "{p:?} not reused");
                live.push((q, *l));
            }
            assert_eq!(unsafe { (*heap.0.get()).next }, before);
            // A block grown within its class stays where it is.
            let (p, l) = live[0];
            if class(l.size()).1 > l.size() {
                assert_eq!(unsafe { heap.realloc(p, l, class(l.size()).1) }, p);
                live[0].1 = Layout::from_size_align(class(l.size()).1, 8).unwrap();
            }
        }
        drop(region);
    }

    /// Only a block of the current region grows where it is: a module's
    /// large blocks and earlier chunks come from elsewhere, and one may end
    /// where the region starts.
    #[test]
    fn a_block_outside_the_region_is_moved_to_grow() {
        let mut region = vec![0u128; 1024];
        let heap = Heap::new();
        let base = region.as_mut_ptr() as usize;
        // SAFETY: the region outlives the heap's use of it.
        unsafe {
            let s = &mut *heap.0.get();
            (s.start, s.next, s.end) = (base + 256, base + 256, base + region.len() * 16);
        }
        let outside = (base + 256 - 32) as *mut u8;
        let layout = Layout::from_size_align(32, 8).unwrap();
        // SAFETY: `outside` is 32 bytes of the buffer, as if handed out.
        let grown = unsafe { heap.realloc(outside, layout, 200) };
        assert_ne!(grown, outside, "moved, not grown over the region's start");
        assert_eq!(grown as usize, base + 256);
        // SAFETY: `grown` is the block just handed out, of 200 bytes.
        let again = unsafe { heap.realloc(grown, Layout::from_size_align(200, 8).unwrap(), 400) };
        assert_eq!(again, grown, "the region's last block grows where it is");
        drop(region);
    }
}

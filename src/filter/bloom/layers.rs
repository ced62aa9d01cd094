//! A chain's layers as it stores them: the first inline in the chain, every later one in one
//! tail allocation, whose header also holds the count of saturated counters of a counting
//! chain (the only chains that have any) and the chains a merge kept apart (its members,
//! [`super::merge`]).
//!
//! Why this shape: a filter's fixed memory is the chain (one allocation of fixed size, the
//! Redis value) plus whatever else it points to. RedisBloom's is a 32-byte `SBChain` plus one
//! array of 64-byte `SBLink`s: 96, 160, 224, … bytes for 1, 2, 3, … layers. With the first
//! layer inline, a one-layer filter is the 80-byte chain alone; a grown one adds a tail of
//! 32 + 48 bytes per later layer (jemalloc classes: 80, 128, 192, 256, …), so every shape
//! stays at or under RedisBloom's (2 layers: 160 against 160, 3: 208 against 224). A table
//! of all the layers instead would leave the chain's inline slot unused once it grows.

use std::alloc::Layout;
use std::ptr::NonNull;

use super::layer::Layer;

/// The layers of a chain, oldest first: never empty; and the chain's members (`M`: the
/// chain type, which this file does not name).
///
/// Reads go through [`Layers::iter`], [`Layers::len`], indexing and the few accessors below;
/// the one-layer case (nearly every filter) is a test of the tail pointer.
#[derive(Clone)]
pub struct Layers<M> {
    first: Layer,
    /// Layers 1.. and the saturated-counter count; `None` while there is only the first layer
    /// and no saturated counter.
    tail: Option<Tail<M>>,
}

// The chain keeps seed, error, expansion and four one-byte fields beside this: 80 in all.
const _: () = assert!(std::mem::size_of::<Layers<()>>() == 56);

/// Equal layers, in order; the saturated count follows from them, and whether a tail holds
/// only that count is no part of the filter.
impl<M: PartialEq> PartialEq for Layers<M> {
    fn eq(&self, other: &Self) -> bool {
        self.first == other.first
            && self.rest() == other.rest()
            && self.members() == other.members()
    }
}

impl<M> std::fmt::Debug for Layers<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// The iterator of [`Layers::iter`]: the first layer, then the tail's.
pub type Iter<'a> = std::iter::Chain<std::iter::Once<&'a Layer>, std::slice::Iter<'a, Layer>>;
/// The iterator of [`Layers::iter_mut`].
pub type IterMut<'a> =
    std::iter::Chain<std::iter::Once<&'a mut Layer>, std::slice::IterMut<'a, Layer>>;

impl<M> Layers<M> {
    /// A chain's only layer.
    pub fn one(first: Layer) -> Self {
        Self { first, tail: None }
    }

    /// From a loader's list; `None` when it is empty.
    pub fn from_vec(layers: Vec<Layer>) -> Option<Self> {
        let mut it = layers.into_iter();
        let first = it.next()?;
        let rest: Vec<Layer> = it.collect();
        let tail = (!rest.is_empty()).then(|| Tail::new(0, rest, None));
        Some(Self { first, tail })
    }

    /// The layers after the first, oldest first (empty for a one-layer chain).
    #[inline(always)]
    pub fn rest(&self) -> &[Layer] {
        match &self.tail {
            Some(t) => t.rest(),
            None => &[],
        }
    }

    #[inline(always)]
    fn rest_mut(&mut self) -> &mut [Layer] {
        match &mut self.tail {
            Some(t) => t.rest_mut(),
            None => &mut [],
        }
    }

    /// How many layers (at least 1).
    #[inline]
    #[allow(clippy::len_without_is_empty)] // never empty
    pub fn len(&self) -> usize {
        1 + self.rest().len()
    }

    /// The layers, oldest first.
    #[inline]
    pub fn iter(&self) -> Iter<'_> {
        std::iter::once(&self.first).chain(self.rest())
    }

    /// The layers, oldest first, writable.
    #[inline]
    pub fn iter_mut(&mut self) -> IterMut<'_> {
        let Self { first, tail } = self;
        let rest = match tail {
            Some(t) => t.rest_mut(),
            None => &mut [],
        };
        std::iter::once(first).chain(rest.iter_mut())
    }

    /// The layers, copied into a list.
    pub fn to_vec(&self) -> Vec<Layer> {
        self.iter().cloned().collect()
    }

    /// The first layer.
    #[inline]
    pub fn first(&self) -> &Layer {
        &self.first
    }

    /// The one layer, when there is only one.
    #[inline(always)]
    pub fn only(&self) -> Option<&Layer> {
        self.rest().is_empty().then_some(&self.first)
    }

    /// The one layer, writable, when there is only one.
    #[inline(always)]
    pub fn only_mut(&mut self) -> Option<&mut Layer> {
        if self.rest().is_empty() { Some(&mut self.first) } else { None }
    }

    /// The newest layer.
    #[inline(always)]
    pub fn last(&self) -> &Layer {
        self.rest().last().unwrap_or(&self.first)
    }

    /// The newest layer, writable.
    #[inline(always)]
    pub fn last_mut(&mut self) -> &mut Layer {
        let Self { first, tail } = self;
        match tail.as_mut().and_then(|t| t.rest_mut().last_mut()) {
            Some(last) => last,
            None => first,
        }
    }

    /// The newest layer, writable, and the older ones, read-only: the first layer (when it is
    /// not the newest) and those between it and the newest, oldest first. Plain parts rather
    /// than an iterator, so the hot paths loop over them without an adapter's state.
    #[inline(always)]
    pub fn split_last_mut(&mut self) -> (&mut Layer, Option<&Layer>, &[Layer]) {
        let Self { first, tail } = self;
        match tail.as_mut().and_then(|t| t.rest_mut().split_last_mut()) {
            Some((last, between)) => (last, Some(first), between),
            None => (first, None, &[]),
        }
    }

    /// Layer `index`, if there is one.
    #[inline]
    pub fn get(&self, index: usize) -> Option<&Layer> {
        match index {
            0 => Some(&self.first),
            i => self.rest().get(i - 1),
        }
    }

    /// Layer `index`, writable, if there is one.
    #[inline]
    pub fn get_mut(&mut self, index: usize) -> Option<&mut Layer> {
        match index {
            0 => Some(&mut self.first),
            i => self.rest_mut().get_mut(i - 1),
        }
    }

    /// Appends a layer: the tail grows by exactly one slot.
    pub fn push(&mut self, layer: Layer) {
        let (saturated, mut rest, members) = match self.tail.take() {
            Some(t) => t.into_parts(),
            None => (0, Vec::new(), None),
        };
        rest.reserve_exact(1);
        rest.push(layer);
        self.tail = Some(Tail::new(saturated, rest, members));
    }

    /// The chains a merge kept apart from this one ([`super::merge`]): empty for every chain
    /// that never took a merge.
    #[inline(always)]
    pub fn members(&self) -> &[M] {
        match &self.tail {
            Some(t) => t.members(),
            None => &[],
        }
    }

    /// [`Layers::members`], writable (a counting member's deletes, a merge into a member).
    pub fn members_mut(&mut self) -> &mut [M] {
        match &mut self.tail {
            Some(t) => t.members_mut(),
            None => &mut [],
        }
    }

    /// Replaces the members (none: `members` empty).
    pub fn set_members(&mut self, members: Vec<M>) {
        let members = (!members.is_empty()).then(|| members.into_boxed_slice());
        let (saturated, rest) = match self.tail.take() {
            Some(t) => {
                let (saturated, rest, _) = t.into_parts();
                (saturated, rest)
            }
            None => (0, Vec::new()),
        };
        self.tail = Tail::holding(saturated, rest, members);
    }

    /// A copy of the layers (and the saturated count) without the members.
    pub fn clone_alone(&self) -> Self {
        let tail = self.tail.as_ref().and_then(|t| {
            let keep = !t.rest().is_empty() || t.saturated() != 0;
            keep.then(|| Tail::new(t.saturated(), t.rest().to_vec(), None))
        });
        Self { first: self.first.clone(), tail }
    }

    /// Takes the members out, leaving none.
    pub fn take_members(&mut self) -> Vec<M> {
        let Some(t) = self.tail.take() else { return Vec::new() };
        let (saturated, rest, members) = t.into_parts();
        self.tail = Tail::holding(saturated, rest, None);
        members.map(Vec::from).unwrap_or_default()
    }

    /// Bytes of the tail allocation (0 without one): what the chain holds besides itself and
    /// the bit arrays.
    pub fn tail_bytes(&self) -> usize {
        self.tail.as_ref().map_or(0, |t| Tail::<M>::layout(t.header().len).size())
    }

    /// Counters at their maximum (counting chains; 0 in others).
    #[inline]
    pub fn saturated(&self) -> u64 {
        self.tail.as_ref().map_or(0, Tail::saturated)
    }

    /// Sets the count of saturated counters. A chain without a tail gets one only for a
    /// count above 0: a counting filter of one layer pays for it once a counter saturates.
    pub fn set_saturated(&mut self, n: u64) {
        match &mut self.tail {
            Some(t) => *t.saturated_mut() = n,
            None if n == 0 => {}
            None => self.tail = Some(Tail::new(n, Vec::new(), None)),
        }
    }

    /// Adds `n` to the count of saturated counters.
    #[inline]
    pub fn add_saturated(&mut self, n: u64) {
        if n != 0 {
            self.set_saturated(self.saturated() + n);
        }
    }

    /// Lets `mv` move the tail and every layer's bit array (active defragmentation).
    ///
    /// # Safety
    /// `mv` must keep the contract of [`Mover`](crate::filter::mem::Mover).
    pub unsafe fn relocate(&mut self, mv: &mut crate::filter::mem::Mover<'_>) {
        // SAFETY: the caller's contract on `mv`.
        unsafe {
            if let Some(t) = &mut self.tail {
                t.relocate(mv);
            }
            for layer in self.iter_mut() {
                layer.relocate(mv);
            }
        }
    }
}

impl<M> std::ops::Index<usize> for Layers<M> {
    type Output = Layer;
    #[inline]
    fn index(&self, index: usize) -> &Layer {
        match index {
            0 => &self.first,
            i => &self.rest()[i - 1],
        }
    }
}

impl<M> std::ops::IndexMut<usize> for Layers<M> {
    #[inline]
    fn index_mut(&mut self, index: usize) -> &mut Layer {
        match index {
            0 => &mut self.first,
            i => &mut self.rest_mut()[i - 1],
        }
    }
}

impl<'a, M> IntoIterator for &'a Layers<M> {
    type Item = &'a Layer;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// The header of a tail allocation, followed by its layers.
#[repr(C)]
struct Header<M> {
    /// Layers after the header.
    len: usize,
    /// Saturated counters over all the chain's layers (counting chains).
    saturated: u64,
    /// The chains a merge kept apart ([`Layers::members`]), never an empty slice.
    members: Option<Box<[M]>>,
}

/// One allocation: a [`Header`] and `len` layers right after it (a thin pointer, so the chain
/// keeps 8 bytes for it).
struct Tail<M>(NonNull<Header<M>>);

// SAFETY: a `Tail` owns its allocation and the layers in it, as a `Box<(Header, [Layer])>`
// would; `Layer` is `Send` and `Sync`, and nothing is shared.
unsafe impl<M: Send> Send for Tail<M> {}
// SAFETY: as above: `&Tail` only gives `&Layer`s.
unsafe impl<M: Sync> Sync for Tail<M> {}

/// Offset of the layers in a tail allocation: the header's size, which `Layer`'s alignment
/// divides (both are 8-aligned; checked here).
/// The header's size is the same for every member type (its members are a boxed slice: a
/// pointer and a length).
const REST_OFFSET: usize = std::mem::size_of::<Header<()>>();
const _: () = assert!(REST_OFFSET == 32);
const _: () = assert!(REST_OFFSET % std::mem::align_of::<Layer>() == 0);
const _: () = assert!(std::mem::align_of::<Layer>() <= std::mem::align_of::<Header<()>>());

impl<M> Tail<M> {
    /// The allocation layout for `len` layers. Cannot overflow: `len` layers already exist in
    /// memory (in the `Vec` they come from), so their bytes plus the header's fit in `isize`.
    fn layout(len: usize) -> Layout {
        let bytes = REST_OFFSET + len * std::mem::size_of::<Layer>();
        Layout::from_size_align(bytes, std::mem::align_of::<Header<M>>())
            .expect("a tail of existing layers fits in isize")
    }

    /// A tail holding what is given, or none when there is nothing to hold (a chain of one
    /// layer, no saturated counter, no member: the chain alone).
    fn holding(saturated: u64, rest: Vec<Layer>, members: Option<Box<[M]>>) -> Option<Self> {
        let empty = saturated == 0 && rest.is_empty() && members.is_none();
        (!empty).then(|| Tail::new(saturated, rest, members))
    }

    /// A tail holding `rest` (moved in), the count `saturated` and the members.
    fn new(saturated: u64, mut rest: Vec<Layer>, members: Option<Box<[M]>>) -> Self {
        let len = rest.len();
        let layout = Self::layout(len);
        // SAFETY: `layout` has a non-zero size (the header).
        let raw = unsafe { std::alloc::alloc(layout) };
        let Some(ptr) = NonNull::new(raw.cast::<Header<M>>()) else {
            std::alloc::handle_alloc_error(layout)
        };
        // SAFETY: `ptr` is a fresh allocation of `layout`: a header, then room for `len`
        // layers at `REST_OFFSET` (aligned, as asserted above). The layers are moved bitwise
        // from `rest`, whose length is then set to 0 so that it frees its buffer without
        // dropping them: each has exactly one owner, the tail.
        unsafe {
            ptr.as_ptr().write(Header { len, saturated, members });
            let dst = raw.add(REST_OFFSET).cast::<Layer>();
            std::ptr::copy_nonoverlapping(rest.as_ptr(), dst, len);
            rest.set_len(0);
        }
        Self(ptr)
    }

    #[inline(always)]
    fn header(&self) -> &Header<M> {
        // SAFETY: `self.0` points to a live header written by `new` (or moved by `relocate`).
        unsafe { self.0.as_ref() }
    }

    #[inline(always)]
    fn rest(&self) -> &[Layer] {
        // SAFETY: the allocation holds `len` initialized layers at `REST_OFFSET`, owned by
        // the tail and borrowed here as long as `self`.
        unsafe {
            let base = self.0.as_ptr().cast::<u8>().add(REST_OFFSET).cast::<Layer>();
            std::slice::from_raw_parts(base, self.header().len)
        }
    }

    #[inline(always)]
    fn rest_mut(&mut self) -> &mut [Layer] {
        let len = self.header().len;
        // SAFETY: as in `rest`, borrowed mutably as long as `self` is.
        unsafe {
            let base = self.0.as_ptr().cast::<u8>().add(REST_OFFSET).cast::<Layer>();
            std::slice::from_raw_parts_mut(base, len)
        }
    }

    fn saturated(&self) -> u64 {
        self.header().saturated
    }

    #[inline(always)]
    fn members(&self) -> &[M] {
        self.header().members.as_deref().unwrap_or(&[])
    }

    fn members_mut(&mut self) -> &mut [M] {
        // SAFETY: the header is live and owned by the tail, borrowed as long as `self` is.
        unsafe { self.0.as_mut().members.as_deref_mut().unwrap_or(&mut []) }
    }

    fn saturated_mut(&mut self) -> &mut u64 {
        // SAFETY: the header is live and owned by the tail, borrowed as long as `self` is.
        unsafe { &mut self.0.as_mut().saturated }
    }

    /// The count, the layers and the members, moved out; the allocation is freed.
    fn into_parts(self) -> (u64, Vec<Layer>, Option<Box<[M]>>) {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: the header is moved out bitwise (its members with it), then the `len`
        // layers are moved bitwise into `rest`'s buffer (room for `len`), and the allocation
        // is freed with the layout it was made with; `this` is never dropped, so the members
        // and layers have one owner each, the values returned.
        unsafe {
            let Header { len, saturated, members } = this.0.as_ptr().read();
            let mut rest = Vec::with_capacity(len);
            let src = this.0.as_ptr().cast::<u8>().add(REST_OFFSET).cast::<Layer>();
            std::ptr::copy_nonoverlapping(src, rest.as_mut_ptr(), len);
            rest.set_len(len);
            std::alloc::dealloc(this.0.as_ptr().cast(), Self::layout(len));
            (saturated, rest, members)
        }
    }

    /// Lets `mv` move the allocation.
    ///
    /// # Safety
    /// `mv` must keep the contract of [`Mover`](crate::filter::mem::Mover).
    unsafe fn relocate(&mut self, mv: &mut crate::filter::mem::Mover<'_>) {
        let layout = Self::layout(self.header().len);
        if let Some(new) = mv(self.0.cast(), layout) {
            // By `mv`'s contract `new` is an allocation of the global allocator for `layout`
            // holding the header and layers bitwise, the old one freed without dropping them.
            self.0 = new.cast();
        }
    }
}

impl<M> Drop for Tail<M> {
    fn drop(&mut self) {
        let len = self.header().len;
        // SAFETY: the tail owns its header's members, its `len` layers and its allocation:
        // each is dropped once, here, then the allocation is freed with the layout `new` made
        // it with.
        unsafe {
            std::ptr::drop_in_place(&raw mut (*self.0.as_ptr()).members);
            std::ptr::drop_in_place(self.rest_mut() as *mut [Layer]);
            std::alloc::dealloc(self.0.as_ptr().cast(), Self::layout(len));
        }
    }
}

impl<M: Clone> Clone for Tail<M> {
    fn clone(&self) -> Self {
        Tail::new(self.saturated(), self.rest().to_vec(), self.header().members.clone())
    }
}

//! The predefined reductions the shim's collectives apply themselves,
//! rather than through `MPI_Reduce_local`: sum, product, maximum and
//! minimum of the C integer and floating types.
//!
//! `MPI_Reduce_local` checks its arguments and looks the operation up on
//! every call: ~180 instructions for one `double` in Open MPI 4.1
//! (`scripts/bench-instr-coll.sh`), once per step of every Allreduce,
//! where the library's own collectives call the operation's function
//! directly.
//!
//! The result must be the library's, bit for bit, or the shim would
//! change the application's data. `apply` computes what
//! `MPI_Reduce_local(in, inout)` leaves in `inout` where the values alone
//! decide it, and declines (returns `false`, `inout` untouched) where the
//! library's own choices show, so that the caller asks the library:
//! - maximum and minimum where a pair is two zeros or holds a NaN: which
//!   one the library keeps (±0, or which NaN) depends on its build and
//!   the count (Open MPI 4.1's vectorised loop keeps `inout`, its scalar
//!   loop and MPICH keep `in`, `tests/progs/coll.c`'s `ops` mode);
//! - sums and products where a pair is two NaNs (which payload survives
//!   is the library's compiler's choice of operand order);
//! - maximum and minimum of unsigned types, which Debian's MPICH 4.0
//!   compares as signed (all of them) and Open MPI 4.1 too
//!   (MPI_UNSIGNED_LONG): `handled` says no.
//!
//! Integers wrap, as the libraries' C arithmetic does on every platform
//! the shim builds for. Buffers are byte slices: an application's may be
//! unaligned.

/// An element type: its width and arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    I32,
    I64,
    U32,
    U64,
    F32,
    F64,
}

/// A predefined operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fun {
    Sum,
    Prod,
    Max,
    Min,
}

impl Elem {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Elem::I32 | Elem::U32 | Elem::F32 => 4,
            Elem::I64 | Elem::U64 | Elem::F64 => 8,
        }
    }
}

macro_rules! lanes {
    ($t:ty, $inp:expr, $io:expr, |$a:ident, $b:ident| $e:expr) => {{
        const W: usize = std::mem::size_of::<$t>();
        for (o, i) in $io.chunks_exact_mut(W).zip($inp.chunks_exact(W)) {
            let mut x = [0u8; W];
            x.copy_from_slice(o);
            let mut y = [0u8; W];
            y.copy_from_slice(i);
            let ($a, $b) = (<$t>::from_ne_bytes(x), <$t>::from_ne_bytes(y));
            o.copy_from_slice(&($e).to_ne_bytes());
        }
    }};
}

/// Whether `apply` may compute `f` on `e` at all (see above).
pub fn handled(e: Elem, f: Fun) -> bool {
    !matches!((e, f), (Elem::U32 | Elem::U64, Fun::Max | Fun::Min))
}

macro_rules! int_fun {
    ($t:ty, $f:expr, $inp:expr, $io:expr) => {
        match $f {
            Fun::Sum => lanes!($t, $inp, $io, |a, b| a.wrapping_add(b)),
            Fun::Prod => lanes!($t, $inp, $io, |a, b| a.wrapping_mul(b)),
            Fun::Max => lanes!($t, $inp, $io, |a, b| if a > b { a } else { b }),
            Fun::Min => lanes!($t, $inp, $io, |a, b| if a < b { a } else { b }),
        }
    };
}

/// True when some element pair of `inp` and `inout` may be one whose
/// result the library's choices decide (see above): for maximum and
/// minimum, both zero or either a NaN; for sum and product, both NaN.
/// Every pair is looked at with float compares and no early exit, so that
/// the loop vectorises (a scan with `any`, or on the bits as 64-bit
/// integers, which SSE2 cannot compare, cost 2-7 times the operation).
macro_rules! float_undecided {
    ($t:ty, $f:expr, $inp:expr, $io:expr) => {{
        const W: usize = std::mem::size_of::<$t>();
        let order = matches!($f, Fun::Max | Fun::Min);
        let mut seen = false;
        for (o, i) in $io.chunks_exact(W).zip($inp.chunks_exact(W)) {
            let mut x = [0u8; W];
            x.copy_from_slice(o);
            let mut y = [0u8; W];
            y.copy_from_slice(i);
            let (a, b) = (<$t>::from_ne_bytes(x), <$t>::from_ne_bytes(y));
            seen |= if order {
                ((a == 0.0) & (b == 0.0)) | a.is_nan() | b.is_nan()
            } else {
                a.is_nan() & b.is_nan()
            };
        }
        seen
    }};
}

macro_rules! float_fun {
    ($t:ty, $f:expr, $inp:expr, $io:expr) => {{
        if float_undecided!($t, $f, $inp, $io) {
            return false;
        }
        match $f {
            Fun::Sum => lanes!($t, $inp, $io, |a, b| a + b),
            Fun::Prod => lanes!($t, $inp, $io, |a, b| a * b),
            Fun::Max => lanes!($t, $inp, $io, |a, b| if a > b { a } else { b }),
            Fun::Min => lanes!($t, $inp, $io, |a, b| if a < b { a } else { b }),
        }
    }};
}

/// `inout[i] = inout[i] f inp[i]` for every whole element of `inout`
/// that `inp` also holds, as `MPI_Reduce_local(inp, inout)` computes it;
/// `false`, with `inout` untouched, where the library's own choices would
/// decide the result (see above).
pub fn apply(e: Elem, f: Fun, inp: &[u8], inout: &mut [u8]) -> bool {
    if !handled(e, f) {
        return false;
    }
    match e {
        Elem::I32 => int_fun!(i32, f, inp, inout),
        Elem::I64 => int_fun!(i64, f, inp, inout),
        Elem::U32 => int_fun!(u32, f, inp, inout),
        Elem::U64 => int_fun!(u64, f, inp, inout),
        Elem::F32 => float_fun!(f32, f, inp, inout),
        Elem::F64 => float_fun!(f64, f, inp, inout),
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    trait Ne: Copy {
        fn ne(self) -> Vec<u8>;
    }
    macro_rules! ne {
        ($($t:ty),*) => {$(
            impl Ne for $t {
                fn ne(self) -> Vec<u8> {
                    self.to_ne_bytes().to_vec()
                }
            }
        )*};
    }
    ne!(i32, u64, f32, f64);

    fn bytes<T: Ne>(v: &[T]) -> Vec<u8> {
        v.iter().flat_map(|x| x.ne()).collect()
    }

    fn f64s(b: &[u8]) -> Vec<f64> {
        b.chunks_exact(8)
            .map(|c| f64::from_ne_bytes(c.try_into().unwrap_or([0; 8])))
            .collect()
    }

    fn i32s(b: &[u8]) -> Vec<i32> {
        b.chunks_exact(4)
            .map(|c| i32::from_ne_bytes(c.try_into().unwrap_or([0; 4])))
            .collect()
    }

    #[test]
    fn integers_wrap_as_c_does() {
        let inp = bytes(&[i32::MAX, -7, 3, i32::MIN]);
        let mut io = bytes(&[1i32, 5, -4, -1]);
        assert!(apply(Elem::I32, Fun::Sum, &inp, &mut io));
        assert_eq!(i32s(&io), vec![i32::MIN, -2, -1, i32::MAX]);
        let mut io = bytes(&[2i32, 5, -4, 2]);
        assert!(apply(Elem::I32, Fun::Prod, &inp, &mut io));
        assert_eq!(i32s(&io), vec![-2, -35, -12, 0]);
        let mut io = bytes(&[2i32, 5, -4, 2]);
        assert!(apply(Elem::I32, Fun::Max, &inp, &mut io));
        assert_eq!(i32s(&io), vec![i32::MAX, 5, 3, 2]);
        let mut io = bytes(&[2i32, 5, -4, 2]);
        assert!(apply(Elem::I32, Fun::Min, &inp, &mut io));
        assert_eq!(i32s(&io), vec![2, -7, -4, i32::MIN]);
        let inp = bytes(&[u64::MAX, 1]);
        let mut io = bytes(&[3u64, 2]);
        assert!(apply(Elem::U64, Fun::Sum, &inp, &mut io));
        assert_eq!(io, bytes(&[2u64, 3]));
    }

    /// Unsigned maximum and minimum are the library's: Debian's MPICH 4.0
    /// compares them as signed.
    #[test]
    fn unsigned_max_and_min_are_left_to_the_library() {
        let inp = bytes(&[u64::MAX, 1]);
        for f in [Fun::Max, Fun::Min] {
            assert!(!handled(Elem::U64, f) && !handled(Elem::U32, f));
            let mut io = bytes(&[3u64, 2]);
            assert!(!apply(Elem::U64, f, &inp, &mut io));
            assert_eq!(io, bytes(&[3u64, 2]), "untouched");
        }
        assert!(handled(Elem::I64, Fun::Max) && handled(Elem::U32, Fun::Prod));
    }

    /// Where only the values decide, the result is the one both libraries
    /// give; where the operand order or the library's build would (±0,
    /// NaN), nothing is written and the library is asked.
    #[test]
    fn floats_are_applied_only_where_the_values_decide() {
        // Equal values (2.5) decide it too.
        let inp = bytes(&[1.0f64, -3.0, f64::INFINITY, 2.5]);
        let mut io = bytes(&[2.0f64, -4.0, 7.0, 2.5]);
        assert!(apply(Elem::F64, Fun::Max, &inp, &mut io));
        assert_eq!(f64s(&io), vec![2.0, -3.0, f64::INFINITY, 2.5]);
        let mut io = bytes(&[2.0f64, -4.0, 7.0, 2.5]);
        assert!(apply(Elem::F64, Fun::Min, &inp, &mut io));
        assert_eq!(f64s(&io), vec![1.0, -4.0, 7.0, 2.5]);
        for (a, b) in [
            (0.0f64, -0.0f64),
            (-0.0, 0.0),
            (f64::NAN, 1.0),
            (1.0, f64::NAN),
        ] {
            for f in [Fun::Max, Fun::Min] {
                let mut io = bytes(&[5.0f64, a]);
                let before = io.clone();
                assert!(
                    !apply(Elem::F64, f, &bytes(&[4.0f64, b]), &mut io),
                    "{a} {b} {f:?}"
                );
                assert_eq!(io, before, "untouched");
            }
        }
        // One NaN: the sum is that NaN whichever operand it is.
        let mut io = bytes(&[f64::NAN, 1.0, -0.0]);
        assert!(apply(
            Elem::F64,
            Fun::Sum,
            &bytes(&[1.0f64, f64::NAN, -0.0]),
            &mut io
        ));
        let r = f64s(&io);
        assert!(r[0].is_nan() && r[1].is_nan() && r[2] == 0.0 && r[2].is_sign_negative());
        // Two different NaNs: the payload kept is the library's choice.
        let other = f64::from_bits(f64::NAN.to_bits() | 1);
        let mut io = bytes(&[f64::NAN]);
        assert!(!apply(Elem::F64, Fun::Prod, &bytes(&[other]), &mut io));
        let mut io = bytes(&[f32::NAN]);
        assert!(!apply(Elem::F32, Fun::Max, &bytes(&[1.0f32]), &mut io));
    }

    #[test]
    fn unaligned_and_partial_buffers() {
        // One byte in, so that no element is aligned; a trailing partial
        // element of `inout` is left alone.
        let mut a = [0u8; 1 + 16 + 3];
        let mut b = [0u8; 1 + 16];
        a[1..17].copy_from_slice(&bytes(&[1.5f64, -2.0]));
        b[1..17].copy_from_slice(&bytes(&[0.25f64, 4.0]));
        a[17..].copy_from_slice(&[9, 9, 9]);
        assert!(apply(Elem::F64, Fun::Sum, &b[1..], &mut a[1..]));
        assert_eq!(f64s(&a[1..17]), vec![1.75, 2.0]);
        assert_eq!(&a[17..], &[9, 9, 9]);
        let mut f = bytes(&[1.5f32, 3.0]);
        assert!(apply(Elem::F32, Fun::Prod, &bytes(&[2.0f32, -0.5]), &mut f));
        assert_eq!(f, bytes(&[3.0f32, -1.5]));
    }
}

//! Map keys as tvm-ffi's C++ headers hash and compare them inline (`AnyHash` and `AnyEqual` of
//! `tvm/ffi/any.h`, `StableHashBytes` of `base_detail.h`), so a map built here is found into by
//! C++ code and the reverse.
//!
//! Most keys are decided in place: plain values by their bits, strings and bytes by their
//! content (small or not), objects by identity, big integers by value. A type that registers
//! its own `__any_hash__` or `__any_equal__` needs a call, which never runs under the
//! containers' lock: an operation that meets such a key stops before it changes anything,
//! returning [`Undecided`] with the keys to ask about; the caller asks outside the lock, and
//! runs the operation again with the [`Answers`].

use crate::abi::{ffi_type_index as fti, TVMFFIAny};
use crate::runtime::base::error::Result;
use crate::runtime::function::packed::Value;
use crate::runtime::object::header::release_any;
use crate::runtime::object::header::{ObjectHeader, ObjectRef};
use crate::runtime::object::type_table::type_index as ti;
use std::collections::HashMap;

/// The text of a string value, inline or an `ffi.String` object.
pub fn text_of(v: &Value) -> Option<std::borrow::Cow<'_, [u8]>> {
    match v {
        Value::Str(s) => Some(s.as_bytes().into()),
        Value::RawStr(c) => Some(c.as_bytes().into()),
        Value::Object(o) if o.type_index() == ti::STRING => object_content(o).map(Into::into),
        _ => None,
    }
}

/// The bytes of a bytes value, inline or an `ffi.Bytes` object.
pub fn bytes_of(v: &Value) -> Option<std::borrow::Cow<'_, [u8]>> {
    match v {
        Value::Bytes(b) => Some(b.as_slice().into()),
        Value::Object(o) if o.type_index() == ti::BYTES => object_content(o).map(Into::into),
        _ => None,
    }
}

/// Whether two values are equal as tvm-ffi's `AnyEqual` sees them (same kind and value; strings
/// and bytes by content, small or not; other objects by identity).
pub fn any_equal(a: &Value, b: &Value) -> bool {
    if let (Some(x), Some(y)) = (text_of(a), text_of(b)) {
        return x == y;
    }
    if let (Some(x), Some(y)) = (bytes_of(a), bytes_of(b)) {
        return x == y;
    }
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::Null, Value::Null) => true,
        (Value::Object(x), Value::Object(y)) if x.type_index() == y.type_index() && x.as_header() != y.as_header() => {
            // A type may define its own key equality (tvm-ffi's `__any_equal__`).
            match crate::runtime::reflection::type_info::attr(b"__any_equal__", x.type_index()) {
                Some(Value::Func(eq)) => {
                    eq.call(&[a.clone(), b.clone()]).ok().is_some_and(|r| r.as_int().is_ok_and(|v| v != 0))
                }
                _ => false,
            }
        }
        _ => {
            let (x, y) = (a.clone().into_any(), b.clone().into_any());
            let same = x.type_index == y.type_index && x.value == y.value;
            // SAFETY: both were made owned by `into_any` just above; released once.
            unsafe { (release_any(&x), release_any(&y)) };
            same
        }
    }
}

/// Keys whose hash or equality needs a call (new references), and which of the two.
pub struct Undecided {
    pub keys: Vec<ObjectRef>,
    pub hash: bool,
}

/// What calls said about keys, for one operation: hashes by object, and whether each object
/// equals the operation's key. The objects are held, so no address is reused meanwhile.
#[derive(Default)]
pub struct Answers {
    hashes: HashMap<usize, u64>,
    equal: HashMap<usize, bool>,
    held: Vec<ObjectRef>,
}

impl Answers {
    /// Asks the calls `undecided` needs (outside the containers' lock), `key` being the
    /// operation's key.
    pub fn learn(&mut self, undecided: Undecided, key: &TVMFFIAny) -> Result<()> {
        for o in undecided.keys {
            let at = o.as_header() as usize;
            if undecided.hash {
                let h = custom_hash(&o)?;
                self.hashes.insert(at, h);
            } else {
                // SAFETY: the operation's key, alive for the operation.
                let k = unsafe { crate::runtime::function::packed::Value::from_any_view(key) }?;
                let same = any_equal(&k, &crate::runtime::function::packed::Value::Object(o.clone()));
                self.equal.insert(at, same);
            }
            self.held.push(o);
        }
        Ok(())
    }
}

/// `combine(type index, __any_hash__(o))`, as C++ code combines a type's own hash.
fn custom_hash(o: &ObjectRef) -> Result<u64> {
    use crate::runtime::function::packed::Value;
    let index = o.type_index();
    let f = match crate::runtime::reflection::type_info::attr(b"__any_hash__", index) {
        Some(Value::Func(f)) => f,
        _ => return Ok(combine(index as u64, o.as_header() as u64)),
    };
    let h = f.call(&[Value::Object(o.clone())])?.as_int()?;
    Ok(combine(index as u64, h as u64))
}

/// tvm-ffi's `StableHashCombine`.
pub fn combine(key: u64, value: u64) -> u64 {
    key ^ value.wrapping_add(0x9e37_79b9).wrapping_add(key << 6).wrapping_add(key >> 2)
}

const MOD: u64 = 2_147_483_647;

/// tvm-ffi's `StableHashBytes` (little-endian words, wrapping arithmetic).
pub fn stable_hash_bytes(b: &[u8]) -> u64 {
    let step = |r: u64, w: u64| r.wrapping_mul(1_099_511_628_211).wrapping_add(w) % MOD;
    let mut chunks = b.chunks_exact(8);
    let mut r = chunks.by_ref().fold(0u64, |r, c| step(r, u64::from_le_bytes(c.try_into().expect("8 bytes"))));
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        r = step(r, u64::from_le_bytes(w));
    }
    r
}

/// What a key is when it is read as text or bytes.
#[derive(PartialEq, Clone, Copy)]
enum Kind {
    Str,
    Bytes,
}

/// The content of a string or bytes key (small, a caller's C string or byte array, or an
/// object), and which of the two it is.
fn content(k: &TVMFFIAny) -> Option<(Kind, &[u8])> {
    let small = |k: &TVMFFIAny| {
        // SAFETY: the value's own 8 bytes, of which the first `zero_padding` are the content.
        unsafe { std::slice::from_raw_parts(&k.value as *const u64 as *const u8, (k.zero_padding as usize).min(7)) }
    };
    match k.type_index {
        fti::SMALL_STR => Some((Kind::Str, small(k))),
        fti::SMALL_BYTES => Some((Kind::Bytes, small(k))),
        // SAFETY: a valid view's C string (NUL-terminated, alive for the call).
        fti::RAW_STR if !k.as_ptr().is_null() => {
            Some((Kind::Str, unsafe { std::ffi::CStr::from_ptr(k.as_ptr().cast()) }.to_bytes()))
        }
        fti::BYTE_ARRAY_PTR if !k.as_ptr().is_null() => {
            // SAFETY: a valid view's `TVMFFIByteArray` (data and size), alive for the call.
            let (data, size) = unsafe { *(k.as_ptr() as *const (*const u8, usize)) };
            // SAFETY: as above.
            Some((Kind::Bytes, if size == 0 { &[] } else { unsafe { std::slice::from_raw_parts(data, size) } }))
        }
        t if (t == ti::STRING as i32 || t == ti::BYTES as i32) && !k.as_ptr().is_null() => {
            let kind = if t == ti::STRING as i32 { Kind::Str } else { Kind::Bytes };
            // SAFETY: a live string or bytes object of a map or a caller's view.
            Some((kind, unsafe { content_at(k.as_ptr() as *const ObjectHeader) }))
        }
        _ => None,
    }
}

/// The content of a live `ffi.String` or `ffi.Bytes` object (made here or not), borrowed.
pub fn object_content(o: &ObjectRef) -> Option<&[u8]> {
    // SAFETY: a live string or bytes object, held by `o`.
    matches!(o.type_index(), ti::STRING | ti::BYTES).then(|| unsafe { content_at(o.as_header()) })
}

/// The content of the string or bytes object at `p`.
///
/// # Safety
/// `p` is a live `ffi.String` or `ffi.Bytes` (tvm-ffi's `BytesObjBase`: data and size right
/// after the object header, whoever made it), alive for the returned borrow.
unsafe fn content_at<'a>(p: *const ObjectHeader) -> &'a [u8] {
    // SAFETY: the caller's promise.
    let (data, size) =
        unsafe { *((p as *const u8).add(std::mem::size_of::<ObjectHeader>()) as *const (*const u8, u64)) };
    // SAFETY: `size` bytes at `data`, alive while the object is.
    if size == 0 {
        &[]
    } else {
        unsafe { std::slice::from_raw_parts(data, size as usize) }
    }
}

/// The object a key holds, borrowed.
fn object(k: &TVMFFIAny) -> Option<ObjectRef> {
    // SAFETY: an object key of a live map or a caller's view, alive while it is read.
    (k.type_index >= fti::STATIC_OBJECT_BEGIN && !k.as_ptr().is_null())
        .then(|| unsafe { ObjectRef::from_borrowed(k.as_ptr() as *mut ObjectHeader) })
}

/// Whether objects of type `index` hash or compare by a function of their own (`attr`).
fn custom(attr: &[u8], index: u32) -> bool {
    index != ti::BIG_INT && crate::runtime::reflection::type_info::attr(attr, index).is_some()
}

/// A key's hash as C++ code computes it, or the key to ask about.
pub fn hash(k: &TVMFFIAny, answers: &Answers) -> std::result::Result<u64, Undecided> {
    if let Some((kind, bytes)) = content(k) {
        let index = if kind == Kind::Str { ti::STRING } else { ti::BYTES };
        return Ok(combine(index as u64, stable_hash_bytes(bytes)));
    }
    let Some(o) = object(k) else { return Ok(combine(k.type_index as u64, k.value)) };
    let index = o.type_index();
    if index == ti::BIG_INT {
        return Ok(combine(index as u64, big_int_hash(&o)));
    }
    if !custom(b"__any_hash__", index) {
        return Ok(combine(index as u64, k.value));
    }
    answers.hashes.get(&(k.value as usize)).copied().ok_or(Undecided { keys: vec![o], hash: true })
}

/// A big integer's hash by value: what its `__any_hash__` gives C++ code too.
pub fn big_int_hash(o: &ObjectRef) -> u64 {
    let words = crate::runtime::container::big_int_words(o).unwrap_or_default();
    words.iter().fold(0u64, |h, &w| combine(h, w as u64))
}

/// Whether `key` (an operation's key) equals `stored` as C++ code decides it, or the stored
/// key to ask about.
pub fn equal(key: &TVMFFIAny, stored: &TVMFFIAny, answers: &Answers) -> std::result::Result<bool, Undecided> {
    if key.type_index == stored.type_index && key.value == stored.value && key.zero_padding == stored.zero_padding {
        return Ok(true);
    }
    if let (Some((a, x)), Some((b, y))) = (content(key), content(stored)) {
        return Ok(a == b && x == y);
    }
    let (Some(x), Some(y)) = (object(key), object(stored)) else { return Ok(false) };
    if x.type_index() != y.type_index() {
        return Ok(false);
    }
    if x.type_index() == ti::BIG_INT {
        use crate::runtime::container::big_int_words;
        return Ok(big_int_words(&x) == big_int_words(&y));
    }
    if !custom(b"__any_equal__", x.type_index()) {
        return Ok(false);
    }
    answers.equal.get(&(stored.value as usize)).copied().ok_or(Undecided { keys: vec![y], hash: false })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_hash_as_tvm_ffi_does() {
        // Values computed by tvm-ffi 0.1.15's StableHashBytes.
        assert_eq!(stable_hash_bytes(b""), 0);
        assert_eq!(stable_hash_bytes(b"a"), 97);
        let w = u64::from_le_bytes(*b"abcdefgh");
        let r = w % MOD;
        let tail = u64::from_le_bytes(*b"ij\0\0\0\0\0\0");
        assert_eq!(stable_hash_bytes(b"abcdefghij"), r.wrapping_mul(1_099_511_628_211).wrapping_add(tail) % MOD);
    }

    #[test]
    fn small_and_object_strings_hash_and_compare_alike() {
        let a = crate::runtime::function::packed::Value::Str("param_0".into()).into_any();
        let b = crate::runtime::function::packed::Value::Str("a longer parameter name".into()).into_any();
        let none = Answers::default();
        assert_eq!(a.type_index, fti::SMALL_STR);
        assert!(b.type_index >= fti::STATIC_OBJECT_BEGIN);
        let raw = std::ffi::CString::new("a longer parameter name").unwrap();
        let view = TVMFFIAny::ptr(fti::RAW_STR, raw.as_ptr().cast());
        assert_eq!(hash(&view, &none).ok(), hash(&b, &none).ok());
        assert!(equal(&view, &b, &none).ok().unwrap());
        assert!(!equal(&a, &b, &none).ok().unwrap());
        // SAFETY: made owned above, released once.
        unsafe { crate::runtime::object::header::release_any(&b) };
    }
}

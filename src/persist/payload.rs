//! [`Payload`]: how a durable job's value becomes bytes in the journal and
//! back.

use alloc::string::String;
use alloc::vec::Vec;

/// How a job's value is stored in the journal.
///
/// ```
/// use tickwheel::persist::Payload;
///
/// #[derive(Clone, Debug, PartialEq)]
/// struct OrderId(u64);
///
/// impl Payload for OrderId {
///     fn encode(&self) -> Vec<u8> {
///         self.0.to_le_bytes().to_vec()
///     }
///     fn decode(bytes: &[u8]) -> Option<Self> {
///         Some(OrderId(u64::from_le_bytes(bytes.try_into().ok()?)))
///     }
/// }
/// assert_eq!(OrderId::decode(&OrderId(7).encode()), Some(OrderId(7)));
/// ```
pub trait Payload: Sized {
    /// The bytes to store.
    ///
    /// ```
    /// use tickwheel::persist::Payload;
    ///
    /// assert_eq!(String::from("close 17").encode(), b"close 17");
    /// ```
    fn encode(&self) -> Vec<u8>;
    /// The value back from stored bytes; `None` if they are not one.
    ///
    /// ```
    /// use tickwheel::persist::Payload;
    ///
    /// assert_eq!(u64::decode(&17u64.encode()), Some(17));
    /// assert_eq!(String::decode(&[0xff]), None); // not UTF-8
    /// ```
    fn decode(bytes: &[u8]) -> Option<Self>;
}

impl Payload for Vec<u8> {
    fn encode(&self) -> Vec<u8> {
        self.clone()
    }
    fn decode(bytes: &[u8]) -> Option<Self> {
        Some(bytes.to_vec())
    }
}

impl Payload for String {
    fn encode(&self) -> Vec<u8> {
        self.as_bytes().to_vec()
    }
    fn decode(bytes: &[u8]) -> Option<Self> {
        String::from_utf8(bytes.to_vec()).ok()
    }
}

impl Payload for u64 {
    fn encode(&self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
    fn decode(bytes: &[u8]) -> Option<Self> {
        Some(u64::from_le_bytes(bytes.try_into().ok()?))
    }
}

//! Events for operators (feature `tracing`): `event!(warn, "message",
//! key = value, …)` emits a `tracing` event whose fields are the values'
//! `Display`; without the feature it emits nothing and only borrows the
//! values, so a value used for the event alone warns of nothing.

macro_rules! event {
    ($level:ident, $message:literal $(, $key:ident = $value:expr)* $(,)?) => {{
        #[cfg(feature = "tracing")]
        {
            ::tracing::$level!($($key = %$value,)* $message);
        }
        #[cfg(not(feature = "tracing"))]
        {
            $(let _ = &$value;)*
        }
    }};
}
pub(crate) use event;

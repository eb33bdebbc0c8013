//! The [`Envelope`] trait: the little the router needs to know of a message.

use std::rc::Rc;
use std::sync::Arc;
use std::time::SystemTime;

/// What the router needs to know of a message.
///
/// The router stays generic over the message type: it only reads who sent a
/// message (to filter and route it) and when it was created (to expire it).
/// Both methods are called on hot paths, so they should be cheap field reads.
///
/// Implemented for `&T`, `Box<T>`, `Rc<T>` and `Arc<T>` so that inboxes can
/// hold shared messages without copying them.
///
/// ```
/// use std::time::SystemTime;
/// use troupe_router::Envelope;
///
/// struct Note {
///     from: String,
///     at: SystemTime,
/// }
///
/// impl Envelope for Note {
///     fn sender(&self) -> &str {
///         &self.from
///     }
///     fn created_at(&self) -> SystemTime {
///         self.at
///     }
/// }
/// ```
pub trait Envelope {
    /// The name of the participant (or entry, such as `"user"`) that sent it.
    fn sender(&self) -> &str;

    /// When the message was created; time-to-live is measured from here.
    fn created_at(&self) -> SystemTime;
}

macro_rules! forward_envelope {
    ($($ptr:ty),*) => {$(
        impl<T: Envelope + ?Sized> Envelope for $ptr {
            #[inline]
            fn sender(&self) -> &str {
                (**self).sender()
            }
            #[inline]
            fn created_at(&self) -> SystemTime {
                (**self).created_at()
            }
        }
    )*};
}

forward_envelope!(&T, Box<T>, Rc<T>, Arc<T>);

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    struct Msg(&'static str, SystemTime);

    impl Envelope for Msg {
        fn sender(&self) -> &str {
            self.0
        }
        fn created_at(&self) -> SystemTime {
            self.1
        }
    }

    fn read<E: Envelope>(e: E) -> (String, SystemTime) {
        (e.sender().to_owned(), e.created_at())
    }

    #[test]
    fn pointers_forward_to_the_message() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(5);
        let expected = ("a".to_owned(), t);
        let plain = Msg("a", t);
        assert_eq!(read(&plain), expected);
        assert_eq!(read(Box::new(Msg("a", t))), expected);
        assert_eq!(read(Rc::new(Msg("a", t))), expected);
        assert_eq!(read(Arc::new(Msg("a", t))), expected);
        let boxed: Box<dyn Envelope> = Box::new(Msg("a", t));
        assert_eq!(read(&*boxed), expected);
    }
}

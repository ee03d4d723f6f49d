//! [`conformance_matrix!`](crate::conformance_matrix): one `#[test]` per compiled runtime × store.
//!
//! Which runtimes and stores are compiled in is this crate's features, but a `#[cfg(feature)]` in a
//! macro's expansion would be read against the calling crate's features; so each runtime and store
//! has a helper macro defined twice here, once passing its tokens through and once dropping them,
//! under this crate's own `cfg`.

/// Generates, in the calling module, one module per runtime compiled into `brigade-serve` (`axum`,
/// `actix`, `hyper`, `warp`), each with one test per store (`passes_on_the_memory_store`,
/// `passes_on_the_embedded_store`, `passes_on_the_mongo_store`) that runs
/// `suite(deployment)` on a fresh [`Deployment`](crate::testing::Deployment) of `services`:
///
/// ```ignore
/// async fn suite(d: brigade_serve::testing::Deployment) {
///     let c = brigade_serve::testing::TestClient::default();
///     brigade_serve::testing::run_standard_checks(&c, &d).await;
///     // ... the service's own checks
/// }
/// brigade_serve::conformance_matrix!(my_service::services(), suite);
/// ```
#[macro_export]
macro_rules! conformance_matrix {
    ($services:expr, $suite:path) => {
        $crate::__if_axum! { $crate::__matrix_runtime!(axum, $services, $suite); }
        $crate::__if_actix! { $crate::__matrix_runtime!(actix, $services, $suite); }
        $crate::__if_hyper! { $crate::__matrix_runtime!(hyper, $services, $suite); }
        $crate::__if_warp! { $crate::__matrix_runtime!(warp, $services, $suite); }
    };
}

/// One runtime's module of [`conformance_matrix!`](crate::conformance_matrix).
#[doc(hidden)]
#[macro_export]
macro_rules! __matrix_runtime {
    ($runtime:ident, $services:expr, $suite:path) => {
        mod $runtime {
            #[allow(unused_imports)]
            use super::*;

            #[test]
            fn passes_on_the_memory_store() {
                $crate::testing::run_case(
                    $services,
                    stringify!($runtime),
                    $crate::testing::StoreKind::Memory,
                    $suite,
                );
            }

            $crate::__if_embedded! {
                #[test]
                fn passes_on_the_embedded_store() {
                    $crate::testing::run_case(
                        $services,
                        stringify!($runtime),
                        $crate::testing::StoreKind::Embedded,
                        $suite,
                    );
                }
            }

            #[test]
            fn passes_on_the_mongo_store() {
                $crate::testing::run_case(
                    $services,
                    stringify!($runtime),
                    $crate::testing::StoreKind::Mongo,
                    $suite,
                );
            }
        }
    };
}

/// Passes its tokens through when `brigade-serve` has the `axum` feature, else drops them.
#[cfg(feature = "axum")]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_axum {
    ($($t:tt)*) => { $($t)* };
}
/// Passes its tokens through when `brigade-serve` has the `axum` feature, else drops them.
#[cfg(not(feature = "axum"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_axum {
    ($($t:tt)*) => {};
}

/// Passes its tokens through when `brigade-serve` has the `actix` feature, else drops them.
#[cfg(feature = "actix")]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_actix {
    ($($t:tt)*) => { $($t)* };
}
/// Passes its tokens through when `brigade-serve` has the `actix` feature, else drops them.
#[cfg(not(feature = "actix"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_actix {
    ($($t:tt)*) => {};
}

/// Passes its tokens through when `brigade-serve` has the `hyper` feature, else drops them.
#[cfg(feature = "hyper")]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_hyper {
    ($($t:tt)*) => { $($t)* };
}
/// Passes its tokens through when `brigade-serve` has the `hyper` feature, else drops them.
#[cfg(not(feature = "hyper"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_hyper {
    ($($t:tt)*) => {};
}

/// Passes its tokens through when `brigade-serve` has the `warp` feature, else drops them.
#[cfg(feature = "warp")]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_warp {
    ($($t:tt)*) => { $($t)* };
}
/// Passes its tokens through when `brigade-serve` has the `warp` feature, else drops them.
#[cfg(not(feature = "warp"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_warp {
    ($($t:tt)*) => {};
}

/// Passes its tokens through when `brigade-serve` has the `embedded` feature, else drops them.
#[cfg(feature = "embedded")]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_embedded {
    ($($t:tt)*) => { $($t)* };
}
/// Passes its tokens through when `brigade-serve` has the `embedded` feature, else drops them.
#[cfg(not(feature = "embedded"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_embedded {
    ($($t:tt)*) => {};
}

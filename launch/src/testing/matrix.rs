//! [`conformance_matrix!`](crate::conformance_matrix): one `#[test]` per compiled runtime × store.
//!
//! Both lists are registries, generated from their crates' modules and features: which runtimes
//! are compiled in is `brigade-runtimes`' (`for_each_runtime!`), which stores are `brigade-kit`'s
//! (`for_each_store!`), so a new runtime or store joins every suite with nothing written here.

/// Generates, in the calling module, one module per runtime compiled into `brigade-launch` (named as
/// the runtime: `axum`, `hyper`, ...), each with one test per store compiled into `brigade-kit`
/// (`passes_on_the_memory_store`, `passes_on_the_embedded_store`, ...) and one per other protocol
/// on the memory store (`passes_over_h2c`, `passes_over_h1_tls`, `passes_over_h2_tls`,
/// `passes_over_h3_or_refuses_it`: h3 where the runtime offers it, else its refusal) that runs
/// `suite(deployment)` on a fresh [`Deployment`](crate::testing::Deployment) of `services`; the
/// suite talks through the deployment's own client, which speaks its protocol:
///
/// ```ignore
/// async fn suite(d: brigade_launch::testing::Deployment) {
///     use brigade_launch::testing::Target;
///     let c = d.client();
///     brigade_launch::testing::run_standard_checks(&c, &d).await;
///     // ... the service's own checks
/// }
/// brigade_launch::conformance_matrix!(my_service::services(), suite);
/// ```
#[macro_export]
macro_rules! conformance_matrix {
    ($services:expr, $suite:path) => {
        $crate::runtimes::for_each_runtime!($crate::__matrix_runtime!($services, $suite));
    };
}

/// One runtime's module of [`conformance_matrix!`](crate::conformance_matrix).
#[doc(hidden)]
#[macro_export]
macro_rules! __matrix_runtime {
    ($runtime:ident, $name:literal, $services:expr, $suite:path) => {
        mod $runtime {
            #[allow(unused_imports)]
            use super::*;

            $crate::testing::for_each_store!($crate::__matrix_store!($name, $services, $suite));

            // The other three protocols, on the memory store: the same suite, every answer the
            // same, whatever the wire.
            #[test]
            fn passes_over_h2c() {
                $crate::testing::run_case_over(
                    $services,
                    $name,
                    $crate::testing::StoreKind::Memory,
                    $crate::testing::Wire::H2c,
                    $suite,
                );
            }

            #[test]
            fn passes_over_h1_tls() {
                $crate::testing::run_case_over(
                    $services,
                    $name,
                    $crate::testing::StoreKind::Memory,
                    $crate::testing::Wire::H1Tls,
                    $suite,
                );
            }

            // HTTP/3 where the runtime offers it; where it does not, its refusal at start.
            #[test]
            fn passes_over_h3_or_refuses_it() {
                $crate::testing::run_case_over_h3(
                    $services,
                    $name,
                    $crate::testing::StoreKind::Memory,
                    $suite,
                );
            }

            #[test]
            fn passes_over_h2_tls() {
                $crate::testing::run_case_over(
                    $services,
                    $name,
                    $crate::testing::StoreKind::Memory,
                    $crate::testing::Wire::H2Tls,
                    $suite,
                );
            }
        }
    };
}

/// One store's test of a runtime's module of [`conformance_matrix!`](crate::conformance_matrix).
#[doc(hidden)]
#[macro_export]
macro_rules! __matrix_store {
    ($store:ident, $kind:ident, $case:ident, $name:literal, $services:expr, $suite:path) => {
        #[test]
        fn $case() {
            $crate::testing::run_case($services, $name, $crate::testing::StoreKind::$kind, $suite);
        }
    };
}

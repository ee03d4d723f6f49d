//! Dropping the MongoDB databases of a set of services: what `serve --drop-databases-on-exit` does
//! after it stops, so a comparison that gives every run its own databases leaves none behind.

use std::sync::Arc;

use brigade_kit::service::ServiceConfig;
use brigade_kit::Service;

/// Drops the MongoDB databases of `services` (with `config`'s prefix). Does nothing for other
/// stores, and never drops a database the MongoDB URI names itself.
pub fn drop_databases(services: &[Arc<dyn Service>], config: &ServiceConfig) -> anyhow::Result<()> {
    #[cfg(feature = "mongo")]
    if config.store == brigade_kit::store::StoreKind::Mongo {
        use anyhow::Context;
        use brigade_kit::store::mongo::MongoStore;
        let uri = config
            .store_config
            .mongodb_uri
            .as_deref()
            .context("--store mongo needs --mongodb-uri")?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        for service in services {
            let database = config.database(service.as_ref());
            runtime
                .block_on(async {
                    let store =
                        MongoStore::connect(uri, &database, &[], config.store_config.timeout)
                            .await?;
                    // A URI that names its own database overrides ours: never drop that one.
                    if store.database_name() != database {
                        tracing::warn!(
                            uri_database = store.database_name(),
                            "the MongoDB URI names a database; not dropping it"
                        );
                        return Ok(());
                    }
                    store.drop_database().await
                })
                .with_context(|| format!("Failed to drop the database {database}"))?;
        }
    }
    let _ = (services, config);
    Ok(())
}

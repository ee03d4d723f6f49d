//! The study itself, `--quick`, through the store on memory and embedded (and mongo when
//! `MONGODB_URI` is set and the `mongo` feature is on): its report has every store × phase, the
//! counts asked for, documents growing group by group, on-disk sizes where the store has them.

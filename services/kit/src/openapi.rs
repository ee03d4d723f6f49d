//! The OpenAPI 3.1 document of a service, generated from its route table: every route is an
//! operation, its request body, query and replies described by the domain types' JSON Schemas
//! (`schemars`), and the error answers the kit itself gives added from the route's body rules, so the
//! document cannot drift from the code. Served on `GET /openapi.json` by every app built on the kit.
//!
//! A route describes itself in the table (`RouteTable::accepts`, `query`, `answers`, `errors`, ...);
//! [`document`] adds what every route shares:
//! - a JSON body: 400 (malformed), 413 (over the route's limit), 415 (not JSON), 422 (breaks a rule);
//! - any other body: 413;
//! - a query: 400 (a value of the wrong type) and 422 (a value out of range);
//! - path parameters: 400 (not decodable) and 404 (no such resource, or no route takes that path);
//! - every route: 500, with the error body `{"error": {"code", "message"}}`.
//!
//! Every `GET` route has a `HEAD` operation beside it (all four runtimes answer it, without a body).
//! A known path asked with another method answers 405, which OpenAPI has no per-operation place
//! for; the document's description says so.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{json, Map, Value};

use crate::http::{content_type, pattern_params, BodyKind, Method, RouteSpec};

/// Makes a type's schema (a `$ref` into `components/schemas` for named types).
pub type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

/// The schema of `T`, as a [`SchemaFn`].
pub fn schema_of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// What a successful answer carries.
#[derive(Debug, Clone, Copy)]
pub enum Body {
    /// JSON described by a schema.
    Json(SchemaFn),
    /// Plain text.
    Text,
    /// Raw bytes.
    Octets,
    /// The metrics text (`/metrics`).
    Metrics,
    /// No body (204).
    Empty,
}

/// What the route table says about a route beyond its method, path and body rules.
#[derive(Debug, Clone, Default)]
pub struct RouteDoc {
    /// One line on what it does.
    pub summary: Option<&'static str>,
    /// The JSON body it accepts.
    pub request: Option<SchemaFn>,
    /// Its query parameters, as an object type's properties.
    pub query: Option<SchemaFn>,
    /// Schemas of path parameters that are not any string (`{n}`: an integer in a range).
    pub params: Vec<(&'static str, Value)>,
    /// Its successful answers by status.
    pub answers: Vec<(u16, Body)>,
    /// The error statuses its handler gives beyond those the kit adds.
    pub errors: Vec<u16>,
}

/// The content type of `/metrics` (OpenMetrics text, which Prometheus scrapes).
pub const METRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        400 => "Bad Request: malformed JSON, a query or path value that does not decode",
        404 => "Not Found",
        409 => "Conflict",
        413 => "Payload Too Large: the body is over the route's limit",
        415 => "Unsupported Media Type: a JSON route was sent another content type",
        422 => "Unprocessable: well-formed input that breaks a rule",
        500 => "Internal error (the cause is in the server's log)",
        502 => "Bad Gateway: a peer service answered something unusable",
        503 => "Unavailable: the store or a peer service cannot be reached",
        _ => "Answer",
    }
}

/// The statuses the kit itself may answer on `spec`, beside the route's own.
fn kit_errors(spec: &RouteSpec, doc: &RouteDoc) -> Vec<u16> {
    let mut errors = vec![500];
    match spec.body {
        BodyKind::Json => errors.extend([400, 413, 415, 422]),
        BodyKind::Raw => errors.push(413),
        BodyKind::Empty => {}
    }
    if doc.query.is_some() {
        errors.extend([400, 422]);
    }
    if !pattern_params(spec.path).is_empty() {
        errors.extend([400, 404]);
    }
    errors
}

/// One route's OpenAPI operation object.
fn operation(spec: &RouteSpec, doc: &RouteDoc, generator: &mut SchemaGenerator) -> Value {
    let mut op = Map::new();
    op.insert(
        "operationId".into(),
        json!(format!("{} {}", spec.method, spec.path)),
    );
    if let Some(s) = doc.summary {
        op.insert("summary".into(), json!(s));
    }
    let parameters = parameters(spec, doc, generator);
    if !parameters.is_empty() {
        op.insert("parameters".into(), Value::Array(parameters));
    }
    if let Some(body) = request_body(spec, doc, generator) {
        op.insert("requestBody".into(), body);
    }
    let responses = responses(spec, doc, generator);
    op.insert("responses".into(), Value::Object(responses));
    Value::Object(op)
}

/// The operation's path parameters, then its query parameters.
fn parameters(spec: &RouteSpec, doc: &RouteDoc, generator: &mut SchemaGenerator) -> Vec<Value> {
    let mut parameters: Vec<Value> = pattern_params(spec.path)
        .into_iter()
        .map(|p| {
            let schema = doc
                .params
                .iter()
                .find(|(name, _)| *name == p)
                .map_or(json!({"type": "string"}), |(_, s)| s.clone());
            json!({"name": p, "in": "path", "required": true, "schema": schema})
        })
        .collect();
    if let Some(query) = doc.query {
        let schema = query(generator);
        let schema = resolve(generator, schema.as_value());
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(props) = schema["properties"].as_object() {
            for (name, s) in props {
                parameters.push(json!({
                    "name": name,
                    "in": "query",
                    "required": required.contains(&name.as_str()),
                    "schema": s,
                }));
            }
        }
    }
    parameters
}

/// The operation's request body, for a route that reads one.
fn request_body(
    spec: &RouteSpec,
    doc: &RouteDoc,
    generator: &mut SchemaGenerator,
) -> Option<Value> {
    match (spec.body, doc.request) {
        (BodyKind::Json, Some(schema)) => Some(
            json!({"required": true, "content": {content_type::JSON: {"schema": schema(generator)}}}),
        ),
        (BodyKind::Json, None) => {
            Some(json!({"required": true, "content": {content_type::JSON: {"schema": {}}}}))
        }
        (BodyKind::Raw, _) => {
            Some(json!({"content": {"*/*": {"schema": {"type": "string", "format": "binary"}}}}))
        }
        (BodyKind::Empty, _) => None,
    }
}

/// The documented answers by status, then the kit's and the route's error answers not already
/// documented.
fn responses(
    spec: &RouteSpec,
    doc: &RouteDoc,
    generator: &mut SchemaGenerator,
) -> Map<String, Value> {
    let mut responses = Map::new();
    let answers = if doc.answers.is_empty() {
        vec![(200, Body::Empty)]
    } else {
        doc.answers.clone()
    };
    for (status, body) in answers {
        let content = match body {
            Body::Json(schema) => json!({content_type::JSON: {"schema": schema(generator)}}),
            Body::Text => json!({content_type::TEXT: {"schema": {"type": "string"}}}),
            Body::Octets => {
                json!({content_type::OCTETS: {"schema": {"type": "string", "format": "binary"}}})
            }
            Body::Metrics => json!({METRICS_CONTENT_TYPE: {"schema": {"type": "string"}}}),
            Body::Empty => Value::Null,
        };
        let mut r = json!({"description": reason(status)});
        if !content.is_null() {
            r["content"] = content;
        }
        responses.insert(status.to_string(), r);
    }
    let mut errors = kit_errors(spec, doc);
    errors.extend(&doc.errors);
    errors.sort_unstable();
    errors.dedup();
    for status in errors {
        responses.entry(status.to_string()).or_insert_with(|| {
            json!({
                "description": reason(status),
                "content": {content_type::JSON: {"schema": {"$ref": "#/components/schemas/Error"}}},
            })
        });
    }
    responses
}

/// A schema with a top-level `$ref` into the components replaced by what it points to.
fn resolve(generator: &SchemaGenerator, schema: &Value) -> Value {
    if let Some(name) = schema["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix("#/components/schemas/"))
    {
        if let Some(s) = generator.definitions().get(name) {
            return s.clone();
        }
    }
    schema.clone()
}

/// The error body every error answer carries.
fn error_schema() -> Value {
    json!({
        "type": "object",
        "required": ["error"],
        "properties": {"error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string", "enum": [
                    "bad_request", "not_found", "method_not_allowed", "conflict", "payload_too_large",
                    "unsupported_media_type", "unprocessable", "internal", "bad_gateway", "unavailable"
                ]},
                "message": {"type": "string"},
            },
        }},
    })
}

/// The `HEAD` operation every runtime answers beside a `GET` route (RFC 9110): the same statuses
/// and parameters, no body in any answer.
fn head_of(get: &Value, spec: &RouteSpec) -> Value {
    let mut head = get.clone();
    head["operationId"] = json!(format!("HEAD {}", spec.path));
    head["summary"] = json!(format!(
        "The head of `GET {}`: its status, no body",
        spec.path
    ));
    if let Some(responses) = head["responses"].as_object_mut() {
        for answer in responses.values_mut() {
            if let Some(answer) = answer.as_object_mut() {
                answer.remove("content");
            }
        }
    }
    head
}

/// The OpenAPI 3.1 document of service `name` with these routes (each with its description).
pub fn document(name: &str, routes: &[(RouteSpec, &RouteDoc)]) -> Value {
    let mut generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
        })
        .into_generator();
    let mut paths = Map::new();
    for (spec, doc) in routes {
        let op = operation(spec, doc, &mut generator);
        let item = paths
            .entry(spec.path.to_string())
            .or_insert_with(|| json!({}));
        if spec.method == Method::Get {
            item["head"] = head_of(&op, spec);
        }
        item[spec.method.as_str().to_ascii_lowercase()] = op;
    }
    let mut schemas = generator.take_definitions(true);
    schemas.insert("Error".into(), error_schema());
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": name,
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Generated from the service's route table by brigade-kit. A known path \
                asked with a method it does not take answers 405 with the error body; a path no \
                route takes answers 404.",
        },
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::JSON_BODY_LIMIT;

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Note {
        text: String,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Query {
        limit: Option<u32>,
    }

    #[test]
    fn a_route_becomes_an_operation_with_its_schemas_and_the_kits_errors() {
        let post = RouteSpec {
            method: Method::Post,
            path: "/notes/{id}",
            body: BodyKind::Json,
            limit: JSON_BODY_LIMIT,
        };
        let doc = RouteDoc {
            request: Some(schema_of::<Note>),
            query: Some(schema_of::<Query>),
            answers: vec![(201, Body::Json(schema_of::<Note>))],
            errors: vec![409],
            ..Default::default()
        };
        let d = document("notes", &[(post, &doc)]);
        let op = &d["paths"]["/notes/{id}"]["post"];
        assert_eq!(
            op["requestBody"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/Note"
        );
        let mut statuses: Vec<&String> = op["responses"].as_object().unwrap().keys().collect();
        statuses.sort();
        assert_eq!(
            statuses,
            ["201", "400", "404", "409", "413", "415", "422", "500"]
        );
        let params = op["parameters"].as_array().unwrap();
        assert_eq!(params.len(), 2);
        assert_eq!(
            (&params[1]["name"], &params[1]["in"]),
            (&json!("limit"), &json!("query"))
        );
        assert_eq!(
            d["components"]["schemas"]["Note"]["properties"]["text"]["type"],
            "string"
        );
        assert!(d["components"]["schemas"]["Error"].is_object());
    }
}

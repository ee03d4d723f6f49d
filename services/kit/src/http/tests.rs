//! The route table, the body rules, error bodies and decoding, checked without a runtime.

use std::sync::Arc;

use super::*;

fn table() -> RouteTable<()> {
    RouteTable::new()
        .get("/items", |_, _| async { Ok(Reply::text("list")) })
        .post("/items", |_, r| async move {
            let v: serde_json::Value = r.json()?;
            Ok(Reply::created(&v))
        })
        .get("/items/{id}", |_, r| async move {
            Ok(Reply::text(r.param("id").to_string()))
        })
        .get("/boom", |_, _| async { panic!("kaboom") })
}

fn call(app: &App<()>, route: usize, req: RawRequest) -> Reply {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(app.call(route, req))
}

#[test]
fn endpoints_group_methods_by_path() {
    let app = App::new("t", table(), Arc::new(()));
    let e = app.endpoints();
    // The table's three paths, then the kit's own: /metrics and /openapi.json.
    assert_eq!(e.len(), 5);
    assert_eq!((e[3].path, e[4].path), (METRICS_PATH, OPENAPI_PATH));
    assert_eq!(e[0].path, "/items");
    assert_eq!(e[0].methods, vec![(Method::Get, 0), (Method::Post, 1)]);
    assert_eq!(e[1].params, vec!["id"]);
    assert_eq!(e[0].route_for(Method::Delete), None);
    assert_eq!(
        e[0].method_not_allowed("DELETE").code,
        ErrorCode::MethodNotAllowed
    );
}

#[test]
#[should_panic(expected = "added twice")]
fn a_route_added_twice_is_refused() {
    let _ = table().get("/items", |_, _| async { Ok(Reply::text("again")) });
}

#[test]
fn matcher_finds_endpoints_and_params() {
    let app = App::new("t", table(), Arc::new(()));
    let m = app.matcher().at("/items/abc").unwrap();
    assert_eq!(*m.value, 1);
    assert_eq!(m.params.get("id"), Some("abc"));
    assert!(app.matcher().at("/nothing").is_err());
}

#[test]
fn json_route_refuses_other_content_types() {
    let app = App::new("t", table(), Arc::new(()));
    let req = RawRequest {
        content_type: Some("text/plain".into()),
        body: "{}".into(),
        ..Default::default()
    };
    assert_eq!(call(&app, 1, req).status, 415);
    let req = RawRequest {
        content_type: Some("application/json; charset=utf-8".into()),
        body: "{\"a\":1}".into(),
        ..Default::default()
    };
    assert_eq!(call(&app, 1, req).status, 201);
}

#[test]
fn malformed_json_is_400_and_wrong_types_are_422_naming_the_field() {
    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Thing {
        name: String,
    }
    let e = decode_json::<Thing>(b"{\"name\": ").unwrap_err();
    assert_eq!(e.code, ErrorCode::BadRequest);
    let e = decode_json::<Thing>(b"{\"name\": 5}").unwrap_err();
    assert_eq!(e.code, ErrorCode::Unprocessable);
    assert!(e.message.starts_with("name: "), "{}", e.message);
    let e = decode_json::<Thing>(b"{\"name\": \"a\"} trailing").unwrap_err();
    assert_eq!(e.code, ErrorCode::BadRequest);
}

#[test]
fn a_panicking_handler_answers_500_with_a_json_body() {
    let app = App::new("t", table(), Arc::new(()));
    let reply = call(&app, 3, RawRequest::default());
    assert_eq!(reply.status, 500);
    let v: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(v["error"]["code"], "internal");
}

#[test]
fn error_bodies_have_code_and_message() {
    let r = ApiError::conflict("taken").to_reply();
    assert_eq!(r.status, 409);
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"error": {"code": "conflict", "message": "taken"}})
    );
}

#[test]
fn query_values_of_the_wrong_type_are_400_naming_the_parameter() {
    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Q {
        limit: Option<u32>,
    }
    let r = Request {
        query: Some("limit=abc".into()),
        ..Default::default()
    };
    let e = r.query::<Q>().unwrap_err();
    assert_eq!(e.code, ErrorCode::BadRequest);
    assert!(e.message.contains("limit"), "{}", e.message);
    let r = Request {
        query: Some("limit=7".into()),
        ..Default::default()
    };
    assert_eq!(r.query::<Q>().unwrap().limit, Some(7));
}

#[test]
fn an_app_lists_its_routes_without_handlers_in_table_order() {
    let app = App::new(
        "t",
        table().route(
            Route::new(Method::Post, "/raw", |_, _| async {
                Ok(Reply::no_content())
            })
            .body(BodyKind::Raw)
            .limit(7),
        ),
        Arc::new(()),
    );
    let specs = app.routes();
    assert_eq!(specs.len(), 7);
    assert_eq!((specs[5].path, specs[6].path), (METRICS_PATH, OPENAPI_PATH));
    assert_eq!(
        specs[1],
        RouteSpec {
            method: Method::Post,
            path: "/items",
            body: BodyKind::Json,
            limit: JSON_BODY_LIMIT
        }
    );
    assert_eq!(
        (specs[0].method, specs[0].body),
        (Method::Get, BodyKind::Empty)
    );
    assert_eq!((specs[4].body, specs[4].limit), (BodyKind::Raw, 7));
}

#[test]
fn the_kits_own_routes_answer_metrics_once_observed_and_the_document_always() {
    let app = App::new("t", table(), Arc::new(()));
    let reply = call(&app, 4, RawRequest::default());
    assert_eq!(reply.status, 404, "no metrics before the app is observed");
    let doc = call(&app, 5, RawRequest::default());
    assert_eq!(doc.status, 200);
    let v: serde_json::Value = serde_json::from_slice(&doc.body).unwrap();
    assert!(v["paths"]["/items/{id}"]["get"].is_object());
    assert!(v["paths"]["/openapi.json"]["get"].is_object());
    app.observe(Arc::new(crate::observe::Metrics::new(&[], &[])));
    assert_eq!(call(&app, 0, RawRequest::default()).status, 200);
    assert_eq!(app.unmatched("GET", "/nothing", None).status, 404);
    assert_eq!(app.unmatched("DELETE", "/items", Some(0)).status, 405);
    // A router that matched `/items/` to `/items` (skipping the empty segment) is not a 405.
    assert_eq!(app.unmatched("DELETE", "/items/", Some(0)).status, 404);
    assert_eq!(app.refused(1, ApiError::too_large(1)).status, 413);
    let m = call(&app, 4, RawRequest::default());
    assert_eq!(m.status, 200);
    let text = String::from_utf8_lossy(&m.body);
    for line in [
        "brigade_http_requests_total{method=\"GET\",route=\"/items\",status=\"2xx\"} 1",
        "brigade_http_requests_total{method=\"POST\",route=\"/items\",status=\"4xx\"} 1",
        "brigade_http_requests_total{method=\"GET\",route=\"(unmatched)\",status=\"4xx\"} 1",
        "brigade_http_requests_total{method=\"DELETE\",route=\"(unmatched)\",status=\"4xx\"} 2",
    ] {
        assert!(text.contains(line), "missing {line} in\n{text}");
    }
}

#[test]
fn a_traceparent_is_the_handlers_current_trace() {
    let t = RouteTable::new().get("/t", |_: Arc<()>, _| async {
        let t = crate::observe::trace::current().expect("a trace context");
        Ok(Reply::text(t.to_string()))
    });
    let app = App::new("t", t, Arc::new(()));
    let req = RawRequest {
        traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
        ..Default::default()
    };
    assert_eq!(
        &call(&app, 0, req).body[..],
        b"4bf92f3577b34da6a3ce929d0e0e4736"
    );
    let fresh = call(&app, 0, RawRequest::default());
    assert_eq!(fresh.body.len(), 32);
}

#[test]
fn a_callers_budget_is_the_handlers_deadline_and_a_bad_one_is_ignored() {
    let t = RouteTable::new().get("/t", |_: Arc<()>, _| async {
        let left = crate::deadline::remaining().map(|d| d.as_millis());
        Ok(Reply::text(format!("{left:?}")))
    });
    let app = App::new("t", t, Arc::new(()));
    let with = |budget: &str| RawRequest {
        budget: Some(budget.into()),
        ..Default::default()
    };
    let told = call(&app, 0, with("750"));
    let text = String::from_utf8_lossy(&told.body).to_string();
    let left: u128 = text
        .trim_start_matches("Some(")
        .trim_end_matches(')')
        .parse()
        .unwrap_or_else(|_| panic!("{text}"));
    assert!(left <= 750, "{text}");
    for ignored in [None, Some("soon")] {
        let req = RawRequest {
            budget: ignored.map(str::to_string),
            ..Default::default()
        };
        assert_eq!(&call(&app, 0, req).body[..], b"None");
    }
}

#[test]
fn path_parameters_are_taken_from_the_raw_path_and_decoded_once() {
    let slots = ParamSlots::of("/tables/{id}/seat");
    let take = |path: &str| slots.take(path);
    let one = |v: &str| Ok(vec![("id".to_string(), v.to_string())]);
    assert_eq!(take("/tables/abc/seat"), one("abc"));
    assert_eq!(take("/tables/a%2Fb/seat"), one("a/b"));
    assert_eq!(take("/tables/C++/seat"), one("C++"));
    assert_eq!(take("/tables/%2525/seat"), one("%25"));
    assert_eq!(take("/tables/Zo%C3%AB/seat"), one("Zoë"));
    assert_eq!(take("/tables/a%zz/seat"), one("a%zz"));
    assert_eq!(take("/tables//seat"), one(""));
    assert_eq!(take("/tables/%FF/seat"), Err(ParamError::NotUtf8("id")));
    for shape in [
        "/tables/abc/seat/",
        "/tables/a/b/seat",
        "//tables/abc/seat",
        "/tables",
    ] {
        assert_eq!(take(shape), Err(ParamError::Shape), "{shape}");
    }
    assert!(ParamSlots::of("/items").is_empty());
    // A pattern without parameters has a shape too (a router that skips empty segments matched).
    let items = ParamSlots::of("/items");
    assert_eq!(items.take("/items"), Ok(vec![]));
    for shape in ["/items/", "//items", "/items//"] {
        assert_eq!(items.take(shape), Err(ParamError::Shape), "{shape}");
    }
}

#[test]
fn the_app_answers_with_decoded_parameters_and_refuses_a_path_of_another_shape() {
    let app = App::new("t", table(), Arc::new(()));
    let get = |path: &str| {
        let req = RawRequest {
            path: path.to_string(),
            ..Default::default()
        };
        call(&app, 2, req)
    };
    let ok = get("/items/AC%2FDC");
    assert_eq!((ok.status, &ok.body[..]), (200, &b"AC/DC"[..]));
    assert_eq!(get("/items/%C3").status, 400);
    assert_eq!(get("/items/a/b").status, 404);
    let list = |path: &str| {
        let req = RawRequest {
            path: path.to_string(),
            ..Default::default()
        };
        call(&app, 0, req).status
    };
    assert_eq!(
        (list("/items"), list("/items/"), list("//items")),
        (200, 404, 404)
    );
}

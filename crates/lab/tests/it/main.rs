//! Integration tests of the lab API server, through real clients:
//! - `crud`: typed kube-rs CRUD, selectors, pagination, conflicts, finalizers, errors;
//! - `patch`: merge, JSON (with `test`), strategic merge and server-side apply;
//! - `status`: the status subresource and `metadata.generation`;
//! - `ssa_status`: server-side apply on /status with several managers (ownership, removal,
//!   map and atomic lists, conflicts);
//! - `watching`: raw watches with resume, bookmarks, timeouts and 410; kube-runtime's
//!   watcher (410 recovery, dropped streams), a reflector store and a toy Controller;
//! - `kubectl`: Debian's kubectl 1.20 and the machine's kubectl against a CRD-backed object;
//! - `faults`: fault injection, pause, identities and the request log;
//! - `snapshot`: persistence across a restart;
//! - `rbac`, `rbac_kubectl`: identities (ServiceAccount tokens, client certificates), Roles
//!   and bindings, 403s, SelfSubjectReview and SelfSubjectAccessReview, kubectl `auth can-i`;
//! - `review`: refusals and effects the lab once lacked (SSA preconditions, selector syntax,
//!   kind checks on PUT, per-kind name rules, resourceVersion on create, too large versions,
//!   the generation bump of deletion) and what dropping a lab ends;
//! - `validation`: schema and CEL validation with the API server's 422 causes, the project's
//!   CRDs, and the test-only raw insert.

// Test helpers unwrap like the tests themselves (clippy.toml's allow-unwrap-in-tests covers
// only `#[test]` functions, not the helpers they call).
#![allow(clippy::unwrap_used)]

mod crud;
mod faults;
mod kubectl;
mod patch;
mod rbac;
mod rbac_kubectl;
mod review;
mod snapshot;
mod ssa_status;
mod status;
mod support;
mod validation;
mod watching;

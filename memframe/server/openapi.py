"""The OpenAPI 3.0 description of the team memory API, served at ``/openapi.json``.

Every status the server answers is listed with its body (tests/server/test_statuses.py provokes
each one on real servers, SQLite and PostgreSQL, and validates the bodies against this
document), including those of the transport: ``408`` (headers or body too slow) and ``503``
(too many connections, too many requests in flight, shutting down). A method a path does not
list is answered ``405`` with an ``Allow`` header and the JSON error body."""

from __future__ import annotations

from typing import Any

_ERROR: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "details"],
            "properties": {
                "message": {"type": "string"},
                "details": {
                    "type": "object",
                    "required": ["error_code"],
                    "properties": {"error_code": {"type": "string"}},
                    "additionalProperties": True,
                },
            },
        }
    },
}
_KEY = {"type": "string", "minLength": 1, "maxLength": 512, "pattern": r"^[^/\\].*\.md$"}
_REPO_PARAM = {
    "name": "repo",
    "in": "query",
    "required": True,
    "schema": {
        "type": "string",
        "pattern": r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}/[A-Za-z0-9][A-Za-z0-9._-]{0,99}$",
    },
    "description": "owner/name",
}


def _error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


# answered by the transport or the app for any request
_TRANSPORT = {
    "408": _error(
        "request_timeout: the headers (or a PUT's body) did not arrive within the request "
        "timeout; the connection is closed"
    ),
    "503": _error(
        "too_many_connections (past --max-connections), concurrency_limit (past "
        "--limit-concurrency) or shutting_down; the connection is closed"
    ),
}
_INTERNAL = {"500": _error("internal_error: the storage failed; the request was not acknowledged")}
_NO_AUTH: list[dict[str, list[str]]] = []  # overrides the document's bearer requirement


OPENAPI: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {
        "title": "memframe team memory",
        "version": "1",
        "description": "Team memory entries (Markdown files keyed by relative path) per repo.",
    },
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "responses": {
            "MethodNotAllowed": _error(
                "method_not_allowed: a method the path does not list (an Allow header names "
                "those it does)"
            )
        },
        "schemas": {
            "Error": _ERROR,
            "Repo": {
                "type": "object",
                "required": [
                    "organizationId",
                    "repo",
                    "version",
                    "lastModified",
                    "checksum",
                    "content",
                ],
                "properties": {
                    "organizationId": {"type": "string"},
                    "repo": {"type": "string"},
                    "version": {"type": "integer"},
                    "lastModified": {"type": "string", "format": "date-time"},
                    "checksum": {"type": "string"},
                    "content": {
                        "type": "object",
                        "required": ["entryChecksums"],
                        "properties": {
                            "entries": {
                                "type": "object",
                                "additionalProperties": {"type": "string"},
                            },
                            "entryChecksums": {
                                "type": "object",
                                "additionalProperties": {"type": "string"},
                            },
                        },
                    },
                },
            },
            "PutBody": {
                "type": "object",
                "required": ["entries"],
                "properties": {
                    "entries": {
                        "type": "object",
                        "propertyNames": _KEY,
                        "additionalProperties": {
                            "type": "string",
                            "description": "at most 250,000 bytes of UTF-8 (else 413)",
                        },
                    }
                },
            },
            "PutResult": {
                "type": "object",
                "required": ["checksum", "lastModified"],
                "properties": {
                    "checksum": {"type": "string"},
                    "lastModified": {"type": "string", "format": "date-time"},
                },
            },
        },
    },
    "security": [{"bearer": []}],
    "paths": {
        "/api/claude_code/team_memory": {
            "get": {
                "operationId": "getTeamMemory",
                "parameters": [
                    _REPO_PARAM,
                    {
                        "name": "view",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "string", "enum": ["hashes"]},
                    },
                    {
                        "name": "If-None-Match",
                        "in": "header",
                        "required": False,
                        "schema": {"type": "string"},
                    },
                ],
                "responses": {
                    "200": {
                        "description": "the repo's entries (or only their checksums)",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Repo"}}
                        },
                    },
                    "304": {"description": "unchanged since the If-None-Match checksum"},
                    "400": _error("bad query"),
                    "401": _error("no or bad token"),
                    "403": _error("the token may not use this repo"),
                    "404": _error("nothing stored"),
                    **_TRANSPORT,
                    **_INTERNAL,
                },
            },
            "put": {
                "operationId": "putTeamMemory",
                "parameters": [
                    _REPO_PARAM,
                    {
                        "name": "If-Match",
                        "in": "header",
                        "required": False,
                        "schema": {"type": "string"},
                    },
                ],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/PutBody"}}
                    },
                },
                "responses": {
                    "200": {
                        "description": "stored (upsert: keys absent from the body are kept)",
                        "content": {
                            "application/json": {
                                "schema": {"$ref": "#/components/schemas/PutResult"}
                            }
                        },
                    },
                    "400": _error("bad body, key or entry"),
                    "401": _error("no or bad token"),
                    "403": _error("the token may not use this repo"),
                    "411": _error("no Content-Length"),
                    "412": _error("If-Match is stale"),
                    "413": _error("too many entries, an entry or the body too large"),
                    "422": _error("an entry contains a secret"),
                    **_TRANSPORT,
                    **_INTERNAL,
                },
            },
        },
        "/healthz": {
            "get": {
                "operationId": "health",
                "security": _NO_AUTH,
                "responses": {
                    "200": {
                        "description": "the server answers",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["status"],
                                    "properties": {"status": {"type": "string", "enum": ["ok"]}},
                                }
                            }
                        },
                    },
                    **_TRANSPORT,
                },
            }
        },
        "/openapi.json": {
            "get": {
                "operationId": "openapi",
                "security": _NO_AUTH,
                "responses": {
                    "200": {
                        "description": "this document",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["openapi", "info", "paths"],
                                }
                            }
                        },
                    },
                    **_TRANSPORT,
                },
            }
        },
    },
}

// Generated from sdk/openapi.json (Paddock's GET /v1/openapi.json) by openapi-typescript:
// do not edit. Regenerate with `npm run generate` (`-- --url URL` to fetch the
// document from a running server first); `npm run generate:check` fails when stale.
export interface paths {
    "/v1/doctor/quarantine": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The caller's rows that failed validation when read, moved out of their tables */
        get: operations["get_doctor_quarantine"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/health": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Server status (no auth): `up` without a token, database and backend with a valid one */
        get: operations["get_health"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memory": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List or search project memory */
        get: operations["get_memory"];
        put?: never;
        /** Add a project memory record */
        post: operations["post_memory"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memory/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a project memory record */
        get: operations["get_memory_id"];
        put?: never;
        post?: never;
        /** Remove a project memory record */
        delete: operations["delete_memory_id"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memory/{id}/approve": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Approve a record a run proposed (it is recalled from then on), optionally widening it to the tenant */
        post: operations["post_memory_id_approve"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** This document (no auth) */
        get: operations["get_openapi_json"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a run */
        get: operations["get_runs_id"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{id}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Cancel a run (it ends `cancelled` shortly after) */
        post: operations["post_runs_id_cancel"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{id}/children": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The subagent runs a run spawned, oldest first */
        get: operations["get_runs_id_children"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{id}/children/{child}/changes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Apply or reject a build subagent's change set */
        post: operations["post_runs_id_children_child_changes"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{id}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One run's events as server-sent events, ending after its `run.finished` */
        get: operations["get_runs_id_events"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{id}/messages": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Send a message to a run in progress (before its next model turn) */
        post: operations["post_runs_id_messages"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{id}/resume": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Resume an interrupted run as a new run */
        post: operations["post_runs_id_resume"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sandboxes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List sandboxes, oldest first
         * @description Every sandbox of the tenant: those started through this API and those of agent runs (`run` names the run; `running` while the run has it, `stopped` once the run ended).
         */
        get: operations["get_sandboxes"];
        put?: never;
        /** Start a sandbox */
        post: operations["post_sandboxes"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sandboxes/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a sandbox */
        get: operations["get_sandboxes_id"];
        put?: never;
        post?: never;
        /**
         * Destroy a sandbox (its record stays, `stopped`)
         * @description Destroys a sandbox started through this API; one that no longer runs answers its record. The sandbox of an agent run that is still going (its `run` is set) is refused with 409 `sandbox_owned_by_run`, naming the run: a sandbox ends with its run, so cancel the run (`POST /v1/runs/{id}/cancel`); deleting never cancels a run as a side effect.
         */
        delete: operations["delete_sandboxes_id"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sandboxes/{id}/egress": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List the sandbox's egress decisions */
        get: operations["get_sandboxes_id_egress"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sandboxes/{id}/exec": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Run a command and wait for it (or stream it) */
        post: operations["post_sandboxes_id_exec"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sandboxes/{id}/files": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List a directory */
        get: operations["get_sandboxes_id_files"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sandboxes/{id}/files/{path}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Read a file */
        get: operations["get_sandboxes_id_files_path"];
        /** Write a file (the body is its bytes) */
        put: operations["put_sandboxes_id_files_path"];
        post?: never;
        /** Delete a file or directory */
        delete: operations["delete_sandboxes_id_files_path"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sandboxes/{id}/keepalive": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Keep a console sandbox alive
         * @description A console sandbox (`"console": true`) lives while its page calls this at least every 120 s: it is destroyed once `keepalive_until` passed while nothing uses it. Answers the sandbox with its new `keepalive_until`.
         */
        post: operations["post_sandboxes_id_keepalive"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sandboxes/{id}/network": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The network of a running sandbox now */
        get: operations["get_sandboxes_id_network"];
        /**
         * Change the allowlist of a running sandbox
         * @description Replaces the sandbox's allowlist: new connections (and DNS answers) follow the new one at once, and every open connection it refuses (a CONNECT tunnel, a transparent relay, an intercepted TLS connection) is cut. A secret stays bound to its hosts: one whose host left the list is no longer put in anywhere. The server's network bounds apply as at create. Only an allowlist can become another: a sandbox made with `none` has no egress to change, `full` is routed by NAT rules made at start, and an allowlist cannot become `none` or `full` (409, saying why). The change is stored as a `network.changed` event, listed by `GET /v1/sandboxes/{id}/network/changes` (also after the sandbox stops).
         */
        put: operations["put_sandboxes_id_network"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sandboxes/{id}/network/changes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The `network.changed` events of a sandbox, running or not
         * @description Every change of the sandbox's allowlist, in the order made (`seq` from 1), with the old and new network, who made it, when and the connections it cut. Kept in the server's database: listed after the sandbox stops and after a restart of the server.
         */
        get: operations["get_sandboxes_id_network_changes"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sandboxes/{id}/pause": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Pause a sandbox
         * @description Releases everything the sandbox holds on the host (no process, no memory) and keeps what its tier can: `filesystem` keeps the workspace's files and stops its processes (`pause.processes_kept` is false); `full` keeps memory and processes too (the microVM tier saves the VM into a file on the server, the gVisor tier checkpoints the sandbox's container: `pause.processes_kept` is true), and is refused (409 `pause_mode_unsupported`, naming the reason) where the tier or the sandbox cannot (native, docker; a gVisor sandbox with network or resumed from a `full` pause already; a microVM whose workspace or a volume is a host directory), or while an exec runs in it. No `mode`: the strongest the sandbox can do. The sandbox stays `paused` across a restart of the server; `POST .../resume`, or any request that needs it (exec, files, processes, ports), resumes it.
         */
        post: operations["post_sandboxes_id_pause"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sandboxes/{id}/ports/{port}/url": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Mint a signed URL for a port, good without a token until it expires
         * @description The URL lets whoever holds it reach this port of this sandbox (and nothing else) until `expires_at`, as the tenant. It is an HMAC over the tenant, sandbox, port and expiry with a key of the server (`port-url.key` in the data dir); only the expiry revokes it. A server's own `POST /url` is therefore reached through host routing only.
         */
        post: operations["post_sandboxes_id_ports_port_url"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sandboxes/{id}/ports/{port}/{path}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Reach a server started inside the sandbox
         * @description Forwards the request (method, headers, streamed body) to `127.0.0.1:{port}` inside the sandbox as `/{path}` with the query, and answers the server's response as it comes. A WebSocket (or any `Connection: upgrade`) request is passed through and the connection relayed both ways. The server sees `Host: 127.0.0.1:{port}`, `X-Forwarded-Host` and `X-Forwarded-Prefix`; never the caller's `Authorization` nor other hop-by-hop headers. Works on every backend and with network `none`: the guest opens the connection inside the sandbox. `/v1/sandboxes/{id}/ports/{port}` without a path redirects to `.../{port}/`.
         */
        get: operations["get_sandboxes_id_ports_port_path"];
        /**
         * Reach a server started inside the sandbox
         * @description Forwards the request (method, headers, streamed body) to `127.0.0.1:{port}` inside the sandbox as `/{path}` with the query, and answers the server's response as it comes. A WebSocket (or any `Connection: upgrade`) request is passed through and the connection relayed both ways. The server sees `Host: 127.0.0.1:{port}`, `X-Forwarded-Host` and `X-Forwarded-Prefix`; never the caller's `Authorization` nor other hop-by-hop headers. Works on every backend and with network `none`: the guest opens the connection inside the sandbox. `/v1/sandboxes/{id}/ports/{port}` without a path redirects to `.../{port}/`.
         */
        put: operations["put_sandboxes_id_ports_port_path"];
        /**
         * Reach a server started inside the sandbox
         * @description Forwards the request (method, headers, streamed body) to `127.0.0.1:{port}` inside the sandbox as `/{path}` with the query, and answers the server's response as it comes. A WebSocket (or any `Connection: upgrade`) request is passed through and the connection relayed both ways. The server sees `Host: 127.0.0.1:{port}`, `X-Forwarded-Host` and `X-Forwarded-Prefix`; never the caller's `Authorization` nor other hop-by-hop headers. Works on every backend and with network `none`: the guest opens the connection inside the sandbox. `/v1/sandboxes/{id}/ports/{port}` without a path redirects to `.../{port}/`.
         */
        post: operations["post_sandboxes_id_ports_port_path"];
        /**
         * Reach a server started inside the sandbox
         * @description Forwards the request (method, headers, streamed body) to `127.0.0.1:{port}` inside the sandbox as `/{path}` with the query, and answers the server's response as it comes. A WebSocket (or any `Connection: upgrade`) request is passed through and the connection relayed both ways. The server sees `Host: 127.0.0.1:{port}`, `X-Forwarded-Host` and `X-Forwarded-Prefix`; never the caller's `Authorization` nor other hop-by-hop headers. Works on every backend and with network `none`: the guest opens the connection inside the sandbox. `/v1/sandboxes/{id}/ports/{port}` without a path redirects to `.../{port}/`.
         */
        delete: operations["delete_sandboxes_id_ports_port_path"];
        options?: never;
        head?: never;
        /**
         * Reach a server started inside the sandbox
         * @description Forwards the request (method, headers, streamed body) to `127.0.0.1:{port}` inside the sandbox as `/{path}` with the query, and answers the server's response as it comes. A WebSocket (or any `Connection: upgrade`) request is passed through and the connection relayed both ways. The server sees `Host: 127.0.0.1:{port}`, `X-Forwarded-Host` and `X-Forwarded-Prefix`; never the caller's `Authorization` nor other hop-by-hop headers. Works on every backend and with network `none`: the guest opens the connection inside the sandbox. `/v1/sandboxes/{id}/ports/{port}` without a path redirects to `.../{port}/`.
         */
        patch: operations["patch_sandboxes_id_ports_port_path"];
        trace?: never;
    };
    "/v1/sandboxes/{id}/processes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List the sandbox's background processes */
        get: operations["get_sandboxes_id_processes"];
        put?: never;
        /** Start a background process */
        post: operations["post_sandboxes_id_processes"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sandboxes/{id}/processes/{handle}/output": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Read a process's output from an offset */
        get: operations["get_sandboxes_id_processes_handle_output"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sandboxes/{id}/processes/{handle}/resize": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Resize a process's terminal */
        post: operations["post_sandboxes_id_processes_handle_resize"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sandboxes/{id}/processes/{handle}/signal": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Send a process a signal */
        post: operations["post_sandboxes_id_processes_handle_signal"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sandboxes/{id}/processes/{handle}/stdin": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Write to a process's stdin */
        post: operations["post_sandboxes_id_processes_handle_stdin"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sandboxes/{id}/processes/{handle}/stream": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Follow a process's output live (a terminal's screen), as server-sent events */
        get: operations["get_sandboxes_id_processes_handle_stream"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sandboxes/{id}/resume": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Resume a paused sandbox
         * @description Restores the saved sandbox (`full` mode: its processes run on) or starts a fresh sandbox of the paused one's spec on its kept files (`filesystem` mode: its processes start anew), under the same id. Bounded: a resume that takes longer than 120 s is abandoned and the sandbox stays paused.
         */
        post: operations["post_sandboxes_id_resume"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sandboxes/{id}/search": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Find files by name and/or content */
        post: operations["post_sandboxes_id_search"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sandboxes/{id}/snapshots": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Snapshot a sandbox's workspace */
        post: operations["post_sandboxes_id_snapshots"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sandboxes/{id}/tunnel/{port}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A raw TCP connection to a port in the sandbox (port-forward)
         * @description With `Connection: upgrade` and `Upgrade: paddock-tcp`, answers `101` and then relays the connection's bytes to and from one TCP connection to `127.0.0.1:{port}` inside the sandbox, opened by the guest (any protocol; every backend; network `none` too). `paddock sandbox port-forward` uses it. Counts as one of the tenant's streams while open.
         */
        get: operations["get_sandboxes_id_tunnel_port"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List sessions, oldest first (archived ones too) */
        get: operations["get_sessions"];
        put?: never;
        /** Create a session on a workspace */
        post: operations["post_sessions"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a session (an archived one too) */
        get: operations["get_sessions_id"];
        put?: never;
        post?: never;
        /**
         * Archive a session, or delete it for good with `purge=true`
         * @description Without `purge`: the same as `PATCH {"archived": true}`, and idempotent. Nothing is removed: `GET` still answers it (`status: archived`) and lists still show it, its runs and events stay readable, and it takes no new run (409 `session_archived`). Archiving is for good (`PATCH {"archived": false}` is 400); fork the session to go on. Refused while one of its runs is in progress (409 `session_busy`).
         *
         *     With `purge=true`: deletes the session and the sessions of the subagents its runs spawned, with their runs, events, messages, steering, goals, plan, checkpoints and rewinds, and the checkpoint files no other checkpoint names (a file another session's checkpoint names stays). Its workspace stays (`DELETE /v1/workspaces/{id}`); snapshots stay, without the session. Refused (409 `session_in_use`, naming them) while a run of it has not ended (give `force=true` to cancel them first) or while a session was forked from it (a fork reads its history from its parent: delete the forks first).
         */
        delete: operations["delete_sessions_id"];
        options?: never;
        head?: never;
        /** Rename a session, archive it or take it out of the archive */
        patch: operations["patch_sessions_id"];
        trace?: never;
    };
    "/v1/sessions/{id}/checkpoints": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List a session's checkpoints, oldest first
         * @description A writing run records one before it starts and after every tool batch that changed the workspace; a rewind records the state it restored.
         */
        get: operations["get_sessions_id_checkpoints"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/diff": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * What changed between two checkpoints, or since one
         * @description Paths added, removed or changed, each text file with its unified diff.
         */
        get: operations["get_sessions_id_diff"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A session's events as server-sent events, from a sequence number on, then live */
        get: operations["get_sessions_id_events"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/fork": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Fork a session: a new one with its history up to a run */
        post: operations["post_sessions_id_fork"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/rewind": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Rewind a session's workspace and history to a checkpoint, as a new run
         * @description Restores only what differs from the workspace now; later runs no longer see the messages after the checkpoint (they stay stored). The workspace as it is is recorded first as a checkpoint (`safety_checkpoint`): the rewind to it (`undo`) undoes this one. Refused while the session runs or another writer holds the workspace, and, unless `force`, when the workspace changed since the session's last checkpoint.
         */
        post: operations["post_sessions_id_rewind"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/runs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List a session's runs, oldest first */
        get: operations["get_sessions_id_runs"];
        put?: never;
        /** Start a run (answers at once; the events route follows it) */
        post: operations["post_sessions_id_runs"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/snapshots": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List snapshots, oldest first */
        get: operations["get_snapshots"];
        put?: never;
        /** Import an archive as a snapshot (the body is the tar.zst) */
        post: operations["post_snapshots"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/snapshots/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a snapshot */
        get: operations["get_snapshots_id"];
        put?: never;
        post?: never;
        /** Delete a snapshot (its archive goes once nothing else refers to it) */
        delete: operations["delete_snapshots_id"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/snapshots/{id}/archive": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Download a snapshot's archive (tar, zstd) */
        get: operations["get_snapshots_id_archive"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/snapshots/{id}/restore": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Start sandboxes from a snapshot */
        post: operations["post_snapshots_id_restore"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/volumes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List volumes by name */
        get: operations["get_volumes"];
        put?: never;
        /** Create a named volume with a size quota the kernel enforces */
        post: operations["post_volumes"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/volumes/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a volume with the bytes it holds */
        get: operations["get_volumes_name"];
        put?: never;
        post?: never;
        /** Delete a volume and its data */
        delete: operations["delete_volumes_name"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/volumes/{name}/snapshots": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List a volume's snapshots by name, with the bytes each holds alone */
        get: operations["get_volumes_name_snapshots"];
        put?: never;
        /** Take a read-only snapshot of a volume (instant; it shares the volume's blocks until they change) */
        post: operations["post_volumes_name_snapshots"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/volumes/{name}/snapshots/{snapshot}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Delete a volume's snapshot and its data */
        delete: operations["delete_volumes_name_snapshots_snapshot"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/workspaces": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List workspaces, oldest first */
        get: operations["get_workspaces"];
        put?: never;
        /** Create a workspace */
        post: operations["post_workspaces"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/workspaces/import": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Create a workspace from an archive (the body is the tar.zst) */
        post: operations["post_workspaces_import"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/workspaces/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a workspace */
        get: operations["get_workspaces_id"];
        put?: never;
        post?: never;
        /**
         * Delete a workspace
         * @description Deletes the workspace row and, when the server made it, its directory. Stopped sandboxes and snapshots keep their rows with `workspace` set to null. Its archived sessions are deleted with it (`DELETE /v1/sessions/{id}?purge=true`); a session not archived keeps it (409 `workspace_in_use`, naming the sessions).
         */
        delete: operations["delete_workspaces_id"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/workspaces/{id}/archive": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Download a workspace's files (tar, zstd) */
        get: operations["get_workspaces_id_archive"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** @description Add a memory record. */
        AddMemory: {
            kind: components["schemas"]["MemoryKind"];
            project?: string | null;
            scope?: components["schemas"]["MemoryScope"] | null;
            supersedes?: components["schemas"]["MemoryId"] | null;
            /** @description At most 2000 characters. */
            text: string;
            workspace?: components["schemas"]["WorkspaceId"] | null;
        };
        BackendView: {
            /** @description `native`, or `docker:IMAGE` / `gvisor:IMAGE`. */
            name: string;
            status: components["schemas"]["ComponentStatus"];
        };
        /**
         * Format: binary
         * @description Raw bytes.
         */
        Binary: string;
        /** @description Limits of one run; reaching any of them ends it with `budget_exceeded`. */
        Budgets: {
            /**
             * Format: u-int64
             * @description Most cost of the model calls in micro-dollars (millionths of a
             *     dollar), priced by the runtime's price table; None: no cost limit
             *     (and then left out, as in budgets written before cost limits existed).
             * @default null
             */
            max_cost_micro_usd: number | null;
            /**
             * Format: u-int64
             * @description Input plus output tokens over all model calls.
             * @default 2000000
             */
            max_tokens: number;
            /**
             * Format: u-int32
             * @default 200
             */
            max_tool_calls: number;
            /**
             * Format: u-int32
             * @description Model calls.
             * @default 50
             */
            max_turns: number;
            /**
             * Format: u-int64
             * @default 1800000
             */
            max_wall_clock_ms: number;
        };
        /** @enum {string} */
        ChangeView: "added" | "removed" | "changed";
        CheckpointDiffView: {
            changes: components["schemas"]["FileChangeView"][];
            from?: components["schemas"]["CheckpointId"] | null;
            to?: components["schemas"]["CheckpointId"] | null;
        };
        /**
         * @description A checkpoint id: ckpt_ and 32 lowercase hex digits.
         * @example ckpt_0192f5e0c1a47d2e9b3c4d5e6f708192
         */
        CheckpointId: string;
        CheckpointList: {
            checkpoints: components["schemas"]["CheckpointView"][];
        };
        /**
         * @description Why a checkpoint was taken.
         * @enum {string}
         */
        CheckpointReason: "run_start" | "tool_batch" | "rewind";
        CheckpointView: {
            /** Format: u-int64 */
            bytes: number;
            created_at: string;
            /** Format: u-int64 */
            event_seq: number;
            /** Format: u-int64 */
            file_count: number;
            id: components["schemas"]["CheckpointId"];
            /**
             * Format: u-int64
             * @description The session's last message and event when it was taken.
             */
            message_seq: number;
            /**
             * Format: u-int64
             * @description Blobs and bytes it stored that no earlier checkpoint had.
             */
            new_blobs: number;
            /** Format: u-int64 */
            new_bytes: number;
            /** Format: u-int64 */
            plan_version: number;
            reason: components["schemas"]["CheckpointReason"];
            run: components["schemas"]["RunId"];
            session: components["schemas"]["SessionId"];
            workspace: components["schemas"]["WorkspaceId"];
        };
        ChildRuns: {
            runs: components["schemas"]["RunView"][];
        };
        /** @enum {string} */
        ComponentStatus: "ok" | "unavailable";
        ComponentView: {
            /** @description `sqlite`, `postgres`, `native`, ... */
            name: string;
            status: components["schemas"]["ComponentStatus"];
        };
        CreateSandbox: {
            /**
             * @description The sandbox backend (`native`, `docker`, `gvisor`) among those this
             *     server enabled (`GET /v1/health` lists them); None: the server's default.
             * @example docker
             */
            backend?: string | null;
            /**
             * @description A console sandbox (the web console's Files and Terminal): it lives
             *     while its page keeps it alive (`POST /v1/sandboxes/{id}/keepalive`
             *     at least every 120 s; a page that goes away asks for a few seconds
             *     more), and a run that needs its workspace takes the workspace over
             *     from it while nothing uses it (no request, command or terminal
             *     stream under way).
             */
            console?: boolean;
            /**
             * @description Environment every command in the sandbox starts with, beneath the
             *     command's own `env` (at most 128 variables; names of letters,
             *     digits and `_`, values up to 32 KiB).
             */
            env?: {
                [key: string]: string;
            };
            /**
             * @description The container image of a docker or gvisor sandbox, among those the
             *     server enabled for that backend; None: the backend's first.
             * @example paddock-sandbox:bookworm
             */
            image?: string | null;
            limits?: components["schemas"]["LimitsRequest"];
            /**
             * @description Labels of the caller's own, shown in the sandbox's view (at most
             *     64; keys up to 128 bytes, values up to 1024).
             */
            metadata?: {
                [key: string]: string;
            };
            network?: components["schemas"]["NetworkPolicy"];
            on_idle?: components["schemas"]["OnIdle"] | null;
            read_only?: boolean;
            /**
             * @description Secrets injected at egress (the sandbox sees only a placeholder in
             *     each one's variable): names of secrets this server defines and
             *     grants to the tenant, or the caller's own (whose value is
             *     write-only). They need a network that allows their hosts.
             */
            secrets?: components["schemas"]["SecretRef"][];
            /**
             * @description Named volumes of the tenant mounted into the sandbox (at most 8):
             *     one sandbox at a time may mount a volume read-write (a second is
             *     refused, 409), any number read-only. Paths follow the mount rule of
             *     docs/security.md (not over /, /workspace, /tmp, nor under /proc,
             *     /sys, /dev, /etc, /usr, /bin, /sbin, /lib, /lib64, /run).
             */
            volumes?: components["schemas"]["VolumeMount"][];
            workspace?: components["schemas"]["WorkspaceId"] | null;
        };
        /** @description `POST /v1/sessions` */
        CreateSession: {
            title?: string | null;
            workspace: components["schemas"]["WorkspaceId"];
        };
        CreateSnapshot: {
            /** @description Patterns left out, added to the defaults (node_modules, target, ...). */
            excludes?: string[];
            /** Format: u-int64 */
            max_bytes?: number | null;
            /** Format: u-int64 */
            max_files?: number | null;
            session?: components["schemas"]["SessionId"] | null;
        };
        /** @description `POST /v1/volumes`, `paddock volume create`. */
        CreateVolume: {
            from_snapshot?: components["schemas"]["SnapshotSource"] | null;
            name: components["schemas"]["VolumeName"];
            /**
             * Format: u-int64
             * @description Bytes the volume may hold (at least 1 MiB, at most the tenant's disk
             *     quota); the kernel refuses the write past it ("Disk quota exceeded").
             */
            quota_bytes: number;
        };
        /** @description `POST /v1/volumes/{name}/snapshots`, `paddock volume snapshot create`. */
        CreateVolumeSnapshot: {
            /** @description Unique per volume, with a volume name's rules. */
            name: components["schemas"]["VolumeName"];
        };
        CreateWorkspace: {
            name: string;
            /**
             * Format: u-int64
             * @description Bytes the workspace may hold (at least 1 MiB, at most the tenant's
             *     disk quota): the workspace is then a btrfs subvolume with a qgroup
             *     limit in the server's volume pool, and the kernel refuses the write
             *     past it ("Disk quota exceeded") from any sandbox on any backend.
             *     503 where the server has no volume pool. Left out: a plain directory
             *     without a quota.
             */
            quota_bytes?: number | null;
        };
        /** @description One success criterion as the review judged it. */
        CriterionReview: {
            criterion: string;
            evidence?: string | null;
            verdict: components["schemas"]["Verdict"];
        };
        /** @enum {string} */
        DatabaseStatus: "ok" | "unavailable" | "full" | "cannot_write";
        /** @description The store: whether it answers, and whether it takes a write. */
        DatabaseView: {
            /** @description `sqlite` or `postgres`. */
            name: string;
            /**
             * @description `ok`; `unavailable` (it does not answer); `full` (it answers, but
             *     its file system has no space left to write); `cannot_write` (it
             *     answers, but a write failed or did not commit within 0.7 s).
             */
            status: components["schemas"]["DatabaseStatus"];
            /**
             * @description Whether a write committed just now (a probe row, at most one probe
             *     per 0.5 s whoever asks).
             */
            writable: boolean;
        };
        DecideChanges: {
            decision: components["schemas"]["Decision"];
        };
        /**
         * @description What a person decides on a build subagent's change set.
         * @enum {string}
         */
        Decision: "apply" | "reject";
        /** @description The archived session, or what a purge removed. */
        DeleteAnswer: components["schemas"]["SessionView"] | components["schemas"]["SessionDeletedView"];
        /** @description `host`, `*.suffix` or an IP literal, with an optional `:port` */
        Destination: string;
        /**
         * @description What drives a run's agent: Paddock's own loop, or an agent CLI run
         *     inside the run's sandbox as the untrusted process it is.
         * @enum {string}
         */
        DriverKind: "builtin" | "claude-code" | "codex" | "opencode";
        /** @description One egress decision. Carries no payload and no header, so no secret. */
        EgressDecision: {
            allowed: boolean;
            /** Format: u-int64 */
            bytes_in: number;
            /**
             * Format: u-int64
             * @description Bytes from the sandbox to the destination and back.
             */
            bytes_out: number;
            /** Format: u-int64 */
            duration_ms: number;
            /** @description The name or IP literal the sandbox asked for. */
            host: string;
            /** Format: u-int16 */
            port: number;
            /** @description Why it was denied (None when allowed). */
            reason?: string | null;
            /**
             * @description How the sandbox reached the proxy: `connect`, `http`, `transparent`
             *     or `dns`; `nat` for a `full` sandbox's routed connection or a
             *     packet the NAT's guard refused (`host` is then the address).
             */
            via: string;
        };
        EgressList: {
            decisions: components["schemas"]["EgressDecision"][];
        };
        /**
         * @description How bytes are written into a JSON string.
         * @enum {string}
         */
        Encoding: "text" | "base64";
        /**
         * @description Why a run stopped. The run's state says whether it completed, failed or
         *     was cancelled; this says what ended it.
         * @enum {string}
         */
        EndReason: "completed" | "budget_exceeded" | "repeated_call" | "awaiting_user" | "cancelled" | "model_error" | "infrastructure_error" | "interrupted" | "queue_timeout";
        /** @description The body of every error answer (and of an SSE `error` event). */
        ErrorBody: {
            error: components["schemas"]["ErrorDetail"];
        };
        ErrorDetail: {
            /** @description Stable and machine-readable: `invalid_request`, `sandbox_not_found`, ... */
            code: string;
            /** @description For people; its wording may change. */
            message: string;
        };
        /**
         * @description The data of one event on a session's or a run's stream. Fields are in
         *     alphabetical order, as the wire has always had them.
         */
        EventEnvelope: {
            /** @description When it was stored (RFC 3339, UTC). */
            created_at: string;
            /** @description The event's payload, as its kind defines it. */
            payload: unknown;
            run?: components["schemas"]["RunId"] | null;
            /**
             * Format: u-int64
             * @description Its sequence number in the session; 0 for a transient event.
             */
            seq: number;
        };
        /** @description A command to run: exactly one of `argv` and `shell`. */
        ExecCommand: {
            argv?: string[];
            cwd?: string | null;
            env?: {
                [key: string]: string;
            };
            /**
             * Format: u-int64
             * @description Most bytes of stdout+stderr kept. Default 1 MiB (at most 16 MiB) for a
             *     JSON answer; no cap for a stream.
             */
            output_cap?: number | null;
            /** @description How output is written into JSON. */
            output_encoding?: components["schemas"]["Encoding"];
            /** @description A script for `/bin/sh -c`. */
            shell?: string | null;
            /** @description The command's whole stdin, as text. */
            stdin?: string | null;
            /** @description The command's whole stdin, base64. */
            stdin_base64?: string | null;
            /** Format: u-int64 */
            timeout_ms?: number | null;
        };
        ExecResult: components["schemas"]["ExitView"] & {
            /** @description How `stdout` and `stderr` are written. */
            encoding: components["schemas"]["Encoding"];
            stderr: string;
            stdout: string;
        };
        /** @description The data of an exec stream's `started` event. */
        ExecStarted: {
            /**
             * Format: u-int32
             * @description The command's pid inside the sandbox.
             */
            pid: number;
        };
        /** @description How a command ended. */
        ExitView: {
            /** Format: u-int64 */
            duration_ms: number;
            /**
             * Format: int32
             * @description The exit code; None when a signal ended it.
             */
            exit_code?: number | null;
            /**
             * @description The out-of-memory killer ended it: the sandbox's memory limit was
             *     reached (raise `limits.memory_bytes`).
             */
            oom_killed?: boolean;
            /** Format: int32 */
            signal?: number | null;
            timed_out: boolean;
            /** @description Output went past the cap and was dropped from there on. */
            truncated: boolean;
        };
        FileChangeView: {
            after?: components["schemas"]["NodeView"] | null;
            before?: components["schemas"]["NodeView"] | null;
            change: components["schemas"]["ChangeView"];
            /** @description The unified diff of a text file. */
            patch?: string | null;
            /** @description For display: bytes not in UTF-8 as `\xNN`. */
            path: string;
            /**
             * @description The path's raw bytes in standard base64, only when it is not UTF-8
             *     (docs/api.md, "Paths not in UTF-8").
             */
            path_bytes?: string | null;
        };
        FileEntry: {
            kind: components["schemas"]["FileKind"];
            /** @description A symlink's target, for display as `name` is. */
            link_target?: string | null;
            /** @description The target's raw bytes in standard base64, only when it is not UTF-8. */
            link_target_bytes?: string | null;
            /** Format: u-int32 */
            mode: number;
            /** Format: int64 */
            mtime_ms: number;
            /**
             * @description For display: bytes not in UTF-8 as `\xNN` (docs/api.md, "Paths not
             *     in UTF-8").
             */
            name: string;
            /** @description The name's raw bytes in standard base64, only when it is not UTF-8. */
            name_bytes?: string | null;
            /** Format: u-int64 */
            size: number;
        };
        /** @enum {string} */
        FileKind: "file" | "dir" | "symlink" | "other";
        /** @description `POST /v1/sessions/{id}/fork` */
        ForkSession: {
            at_checkpoint?: components["schemas"]["CheckpointId"] | null;
            at_run?: components["schemas"]["RunId"] | null;
            title?: string | null;
        };
        /** @description What `GET /v1/health` answers. */
        HealthView: {
            backend?: components["schemas"]["ComponentView"] | null;
            /**
             * @description Every backend a sandbox request may name (`name` or `name:image`),
             *     in the operator's order; only with a token.
             */
            backends?: components["schemas"]["BackendView"][] | null;
            database?: components["schemas"]["DatabaseView"] | null;
            /**
             * @description The caller's tenant's sandboxes running on this node (never the
             *     node's total: other tenants' work is not the caller's to see); only
             *     with a token.
             */
            sandboxes?: number | null;
            status: components["schemas"]["Overall"];
        };
        /**
         * @description Limits asked for; each missing one takes the operator's default. Each has
         *     a floor below which no sandbox could start (the guest, a shell and a
         *     command need that much): asking for less is a 400, never a sandbox that
         *     dies starting.
         */
        LimitsRequest: {
            /**
             * Format: u-int64
             * @description CPU quota in millicpus (1000 = one core), at most 1024 cores.
             */
            cpu_millis?: number | null;
            /** Format: u-int64 */
            memory_bytes?: number | null;
            /** Format: u-int64 */
            open_files?: number | null;
            /** Format: u-int64 */
            pids?: number | null;
            /** Format: u-int64 */
            tmp_bytes?: number | null;
            /**
             * Format: u-int64
             * @description A kernel-enforced quota on the workspace (see docs/security.md).
             */
            workspace_bytes?: number | null;
            /** Format: u-int64 */
            workspace_inodes?: number | null;
        };
        Listing: {
            /** @description For display: bytes not in UTF-8 as `\xNN`. */
            dir: string;
            /** @description The directory's raw bytes in standard base64, only when it is not UTF-8. */
            dir_bytes?: string | null;
            entries: components["schemas"]["FileEntry"][];
        };
        /**
         * @description A memory id: mem_ and 32 lowercase hex digits.
         * @example mem_0192f5e0c1a47d2e9b3c4d5e6f708192
         */
        MemoryId: string;
        /**
         * @description What a memory record is about.
         * @enum {string}
         */
        MemoryKind: "preference" | "convention" | "pitfall" | "fact" | "rule";
        MemoryList: {
            memories: components["schemas"]["MemoryView"][];
        };
        /**
         * @description Who a memory record is for.
         * @enum {string}
         */
        MemoryScope: "tenant" | "workspace" | "project";
        /**
         * @description Whether a memory record is in force.
         * @enum {string}
         */
        MemoryStatus: "active" | "proposed";
        /** @description A memory record as the API shows it. */
        MemoryView: {
            created_at: string;
            id: components["schemas"]["MemoryId"];
            kind: components["schemas"]["MemoryKind"];
            project?: string | null;
            scope: components["schemas"]["MemoryScope"];
            source_run?: components["schemas"]["RunId"] | null;
            source_session?: components["schemas"]["SessionId"] | null;
            status: components["schemas"]["MemoryStatus"];
            superseded_by?: components["schemas"]["MemoryId"] | null;
            text: string;
            updated_at: string;
            workspace?: components["schemas"]["WorkspaceId"] | null;
        };
        /** @description How long a signed port URL lasts. */
        MintPortUrl: {
            /**
             * Format: u-int64
             * @description Seconds from now, 1 to 86400 (a day); default 3600.
             */
            ttl_secs?: number | null;
        };
        /** @description The model of a run as a request names it. */
        ModelChoice: {
            /**
             * @description Another endpoint of the spec's provider (an OpenAI-compatible server);
             *     only those the operator allowed.
             */
            base_url?: string | null;
            /**
             * Format: u-int32
             * @description The model's context window in tokens, instead of its profile's (or
             *     the server's `model_context_window`); at least 4096.
             */
            context_window?: number | null;
            /** @description An inline script: `{"turns": [{"text", "tool_calls": [{"name", "arguments"}]}]}`. */
            scripted?: unknown;
            /** @description `openai:MODEL` or `anthropic:MODEL`. */
            spec?: string | null;
        };
        NetworkChangeList: {
            /** @description Oldest first. */
            changes: components["schemas"]["NetworkChanged"][];
            /**
             * Format: u-int64
             * @description Pass as `after` for the next page; absent on the last page.
             */
            next_after?: number | null;
        };
        /** @description `network.changed`: one change of a running sandbox's network. */
        NetworkChanged: {
            /** @description When (RFC 3339, UTC). */
            at: string;
            /** @description Who changed it: the tenant of the token the request carried. */
            by: string;
            /** @description The open connections the change cut (`host:port`). */
            cut: string[];
            /**
             * @description Always `network.changed`.
             * @example network.changed
             */
            kind: string;
            new: components["schemas"]["NetworkPolicy"];
            old: components["schemas"]["NetworkPolicy"];
            sandbox_id: components["schemas"]["SandboxId"];
            /**
             * Format: u-int64
             * @description The sandbox's changes are numbered from 1 in the order they were made.
             */
            seq: number;
        };
        NetworkPolicy: "none" | {
            /** @description Egress only to these destinations, through the egress proxy. */
            allowlist: components["schemas"]["Destination"][];
        } | "full";
        /** @description `GET /v1/sandboxes/{id}/network`: the network of a running sandbox now. */
        NetworkView: {
            network: components["schemas"]["NetworkPolicy"];
        };
        /** @description A path as one side of a diff has it. */
        NodeView: {
            /** @description sha256 of the content. */
            hash: string;
            /** Format: u-int64 */
            size: number;
            /** @enum {string} */
            type: "file";
        } | {
            /** @enum {string} */
            type: "dir";
        } | {
            /** @description For display: bytes not in UTF-8 as `\xNN`. */
            target: string;
            /** @description The target's raw bytes in standard base64, only when it is not UTF-8. */
            target_bytes?: string | null;
            /** @enum {string} */
            type: "symlink";
        };
        /**
         * @description What the expiry task does to a sandbox left idle for the idle
         *     timeout: the sandbox's own choice (`on_idle` at create), else the
         *     server's (`on_idle` in its config).
         * @enum {string}
         */
        OnIdle: "stop" | "pause";
        /** @description The data of an exec stream's `stdout` or `stderr` event. */
        OutputChunk: {
            /** @description The bytes, written as the request's `output_encoding` asked. */
            data: string;
        };
        /** @enum {string} */
        Overall: "up" | "ok" | "degraded";
        /**
         * @description What a pause keeps of a sandbox.
         * @enum {string}
         */
        PauseMode: "full" | "filesystem";
        /** @description `POST /v1/sandboxes/{id}/pause`. */
        PauseSandbox: {
            mode?: components["schemas"]["PauseMode"] | null;
        };
        /** @description What a paused sandbox kept, and why it was paused. */
        PauseView: {
            mode: components["schemas"]["PauseMode"];
            /** @description RFC 3339 (UTC). */
            paused_at: string;
            /**
             * @description Whether its processes (and memory) were kept: false in `filesystem`
             *     mode, where a resume starts a fresh sandbox on the same files.
             */
            processes_kept: boolean;
            /** @description `requested` (the pause route) or `idle` (`on_idle: pause`). */
            reason: string;
        };
        /** @description A signed port URL. */
        PortUrl: {
            /** @description RFC 3339. */
            expires_at: string;
            /** @description The token alone (`?paddock_token=` or the `paddock_token` cookie). */
            token: string;
            /**
             * @description The port's root with the token in the query; append a path before
             *     the `?` to reach another page. The first request sets the token as
             *     a cookie for the port's path, so a browser's later requests get in.
             */
            url: string;
        };
        ProcessList: {
            processes: components["schemas"]["ProcessView"][];
        };
        ProcessOutputView: {
            data: string;
            /**
             * Format: u-int64
             * @description Bytes before `offset` that the bounded buffer no longer holds.
             */
            dropped: number;
            encoding: components["schemas"]["Encoding"];
            exit?: components["schemas"]["ExitView"] | null;
            /**
             * Format: u-int64
             * @description Offset to ask for next.
             */
            next_offset: number;
            /**
             * Format: u-int64
             * @description Offset of the first byte of `data`.
             */
            offset: number;
            running: boolean;
        };
        ProcessView: {
            command: string[];
            exit?: components["schemas"]["ExitView"] | null;
            /**
             * Format: u-int64
             * @description Names the process in later requests.
             */
            handle: number;
            /** Format: u-int64 */
            output_bytes: number;
            /**
             * Format: u-int32
             * @description Its pid inside the sandbox.
             */
            pid: number;
            /** @description Runs on a pseudo-terminal. */
            pty?: boolean;
            running: boolean;
        };
        /** @description A terminal's size in character cells. */
        PtySize: {
            /** Format: u-int16 */
            cols: number;
            /** Format: u-int16 */
            rows: number;
        };
        QuarantineList: {
            rows: components["schemas"]["QuarantineView"][];
        };
        /** @description One quarantined row as the API shows it. */
        QuarantineView: {
            /** @description The row's key in that table, e.g. `session_id=ses_... seq=4`. */
            key: string;
            quarantined_at: string;
            /** @description The row's columns as stored. */
            raw: Record<string, never>;
            /** @description Why it failed validation. */
            reason: string;
            /**
             * @description The table the row was moved out of (`messages`, `run_events`,
             *     `goals`, `memories`, `session_memories`; a `runs` or `sandboxes` row
             *     is copied and left in place, since other rows refer to it).
             */
            table: string;
            /** @description The row's tenant column as stored. */
            tenant?: string | null;
        };
        /** @description A terminal's new size, in character cells (1 to 1000 each). */
        ResizeTerminal: {
            /** Format: u-int16 */
            cols: number;
            /** Format: u-int16 */
            rows: number;
        };
        RestoreSnapshot: {
            /** @description The backend of the new sandboxes (as in `CreateSandbox`). */
            backend?: string | null;
            /**
             * Format: u-int32
             * @description How many sandboxes to make (more than one is a fork).
             */
            count?: number;
            /** @description Their image (as in `CreateSandbox`). */
            image?: string | null;
            limits?: components["schemas"]["LimitsRequest"];
            network?: components["schemas"]["NetworkPolicy"];
            /**
             * @description The sandboxes' workspaces are read-only (the restore itself writes
             *     them before the sandboxes start).
             */
            read_only?: boolean;
        };
        Restored: {
            sandboxes: components["schemas"]["SandboxView"][];
        };
        /**
         * @description `POST /v1/runs/{id}/resume`: the goal, criteria and mode are the
         *     interrupted run's, and so are its sandbox's backend, image and network
         *     (from its `run.started`, re-checked against what this server enables and
         *     allows); the model is chosen again (as for a new run). A run that had
         *     secrets is not resumed here: they were never stored, and the API takes
         *     none.
         */
        ResumeRunCommand: {
            budgets?: components["schemas"]["Budgets"] | null;
            /**
             * @description Restore the last checkpoint even over changes made since it (they
             *     are checkpointed first); false: such a resume is refused with 409
             *     `workspace_changed`, naming the paths.
             */
            force?: boolean;
            instructions?: string | null;
            model: components["schemas"]["ModelChoice"];
            snapshot_limits?: components["schemas"]["SnapshotLimitsRequest"] | null;
            subagent_models?: {
                [key: string]: components["schemas"]["ModelChoice"];
            };
        };
        /**
         * @description A resumed run as it started, and how to undo its restore when it
         *     overwrote changes.
         */
        ResumedView: components["schemas"]["RunView"] & {
            safety_checkpoint?: components["schemas"]["CheckpointId"] | null;
            /** @description What undoes the restore: the rewind to `safety_checkpoint`. */
            undo?: string | null;
        };
        /** @description The structured end of a run. */
        Review: {
            criteria: components["schemas"]["CriterionReview"][];
            /** @description What shows the verdict: commands that passed, files written, ... */
            evidence: string[];
            /** @description What is left to do. */
            remaining: string[];
            summary: string;
            verdict: components["schemas"]["Verdict"];
        };
        /** @description `POST /v1/sessions/{id}/rewind` */
        RewindSession: {
            /** @description The checkpoint of the session to go back to. */
            checkpoint: components["schemas"]["CheckpointId"];
            /**
             * @description Go on although the workspace changed since the session's last
             *     checkpoint (those changes are checkpointed first); false: such a
             *     rewind is refused with 409 `workspace_changed`, naming the paths.
             */
            force?: boolean;
        };
        RewindView: {
            /** Format: u-int64 */
            bytes_written: number;
            /**
             * @description Paths that had changed since the session's last checkpoint (the
             *     rewind went on over them because it was forced; they are in
             *     `safety_checkpoint`).
             */
            changed: string[];
            checkpoint?: components["schemas"]["CheckpointId"] | null;
            /** Format: u-int64 */
            files_written: number;
            /** Format: u-int64 */
            removed: number;
            /** @description The run that rewound the session (completed). */
            run: components["schemas"]["RunView"];
            /** @description The checkpoint of the workspace as it was before the rewind. */
            safety_checkpoint: components["schemas"]["CheckpointId"];
            /** @description The checkpoint rewound to, and the one of the restored state. */
            to: components["schemas"]["CheckpointId"];
            /** @description What undoes the rewind: the rewind to `safety_checkpoint`. */
            undo: string;
        };
        /**
         * @description A run id: run_ and 32 lowercase hex digits.
         * @example run_0192f5e0c1a47d2e9b3c4d5e6f708192
         */
        RunId: string;
        RunList: {
            runs: components["schemas"]["RunView"][];
        };
        /**
         * @description What a run may do. `plan` offers only read-only tools and mounts the
         *     workspace read-only, so no write gets through, not even from a shell.
         * @enum {string}
         */
        RunMode: "build" | "plan";
        /**
         * @description The run state machine: (queued ->) preparing -> planning -> acting ->
         *     observing / verifying -> completed, with the side exits below.
         * @enum {string}
         */
        RunState: "queued" | "preparing" | "planning" | "acting" | "observing" | "verifying" | "awaiting_user" | "cancelling" | "completed" | "cancelled" | "failed" | "interrupted";
        /** @description What a run has spent so far. */
        RunUsage: {
            /**
             * Format: u-int64
             * @description Cost of the model calls in micro-dollars; 0 when the model has no
             *     price (and then left out, as in usage written before prices existed).
             * @default 0
             */
            cost_micro_usd: number;
            /**
             * Format: u-int64
             * @default 0
             */
            input_tokens: number;
            /**
             * Format: u-int64
             * @default 0
             */
            output_tokens: number;
            /**
             * Format: u-int32
             * @default 0
             */
            tool_calls: number;
            /**
             * Format: u-int32
             * @default 0
             */
            turns: number;
            /**
             * Format: u-int64
             * @default 0
             */
            wall_clock_ms: number;
        };
        RunView: {
            budgets: components["schemas"]["Budgets"];
            created_at: string;
            /** @description What drives the run's agent. */
            driver: components["schemas"]["DriverKind"];
            end_reason?: components["schemas"]["EndReason"] | null;
            end_snapshot?: components["schemas"]["SnapshotId"] | null;
            /** @description Why the run failed or was interrupted. */
            error?: string | null;
            finished_at?: string | null;
            goal: string;
            id: components["schemas"]["RunId"];
            mode: components["schemas"]["RunMode"];
            parent_run?: components["schemas"]["RunId"] | null;
            profile?: components["schemas"]["SubagentProfile"] | null;
            resumed_from?: components["schemas"]["RunId"] | null;
            review?: components["schemas"]["Review"] | null;
            session: components["schemas"]["SessionId"];
            state: components["schemas"]["RunState"];
            task_key?: string | null;
            /** @description Its own usage plus every subagent run's under it, as recorded now. */
            total_usage: components["schemas"]["RunUsage"];
            updated_at: string;
            /** @description The run's own usage (what its budgets count). */
            usage: components["schemas"]["RunUsage"];
        };
        /**
         * @description A sandbox id: 1 to 64 ASCII letters, digits, '-' or '_' (generated ones are sb- and 32 hex digits).
         * @example sb-0192f5e0c1a47d2e9b3c4d5e6f708192
         */
        SandboxId: string;
        /** @description Resource limits of one sandbox. `None` means no limit of that kind. */
        SandboxLimits: {
            /**
             * Format: u-int64
             * @description CPU quota in millicpus (1000 = one core).
             * @default null
             */
            cpu_millis: number | null;
            /**
             * Format: u-int64
             * @default 1073741824
             */
            memory_bytes: number | null;
            /**
             * Format: u-int64
             * @description Most open files per process (RLIMIT_NOFILE).
             * @default 4096
             */
            open_files: number;
            /**
             * Format: u-int64
             * @default 512
             */
            pids: number | null;
            /**
             * Format: u-int64
             * @description Size of the sandbox's /tmp tmpfs.
             * @default 268435456
             */
            tmp_bytes: number;
            /**
             * Format: u-int64
             * @description Most bytes the workspace may hold (a kernel-enforced quota).
             * @default null
             */
            workspace_bytes: number | null;
            /**
             * Format: u-int64
             * @description Most files, directories and links the workspace may hold.
             * @default null
             */
            workspace_inodes: number | null;
        };
        SandboxList: {
            next_after?: components["schemas"]["SandboxId"] | null;
            sandboxes: components["schemas"]["SandboxView"][];
        };
        /**
         * @description What the control plane believes about a sandbox process.
         * @enum {string}
         */
        SandboxState: "running" | "stopped" | "lost" | "paused";
        SandboxView: {
            backend: string;
            /**
             * @description A console sandbox: it ends once `keepalive_until` passes while
             *     nothing uses it, and a run may take its workspace over while idle.
             */
            console?: boolean;
            /** @description RFC 3339 times (UTC). */
            created_at: string;
            /** @description The end of the sandbox's maximum lifetime. */
            expires_at?: string | null;
            id: components["schemas"]["SandboxId"];
            /**
             * @description When it will be destroyed if nothing uses it before (running sandboxes
             *     of the sandbox API only: a run's sandbox lives as long as its run).
             */
            idle_expires_at?: string | null;
            /** @description The container image of a docker or gvisor sandbox. */
            image?: string | null;
            /** @description A running console sandbox's keep-alive deadline (RFC 3339, UTC). */
            keepalive_until?: string | null;
            last_active_at: string;
            limits: components["schemas"]["SandboxLimits"];
            /** @description The labels it was created with. */
            metadata?: {
                [key: string]: string;
            };
            network: components["schemas"]["NetworkPolicy"];
            node: string;
            /**
             * @description What happens to it at `idle_expires_at`: `stop` or `pause`, its
             *     own choice at create or else the server's `on_idle`.
             */
            on_idle: components["schemas"]["OnIdle"];
            pause?: components["schemas"]["PauseView"] | null;
            read_only: boolean;
            restored_from?: components["schemas"]["SnapshotId"] | null;
            run?: components["schemas"]["RunId"] | null;
            state: components["schemas"]["SandboxState"];
            /**
             * @description The named volumes it mounts (a paused one mounts them again when
             *     resumed).
             */
            volumes?: components["schemas"]["VolumeMount"][];
            workspace?: components["schemas"]["WorkspaceId"] | null;
        };
        SearchCommand: {
            /** @description Literal text to find in file contents. */
            content?: string | null;
            /** Format: u-int64 */
            max_file_bytes?: number | null;
            /** Format: u-int32 */
            max_results?: number | null;
            /** @description Glob on file names (`*.rs`). */
            name_glob?: string | null;
            /** @description Directory to search under (default: the workspace root). */
            path?: string | null;
        };
        SearchMatch: {
            /**
             * Format: u-int64
             * @description 1-based line number for content matches, None for name matches.
             */
            line?: number | null;
            /**
             * @description Path relative to the workspace root, for display: bytes not in
             *     UTF-8 as `\xNN` ([`FsPath::display`]).
             */
            path: string;
            /** @description The path's raw bytes in standard base64, only when it is not UTF-8. */
            path_bytes?: string | null;
            /** @description The matching line (trimmed to a sane length) for content matches. */
            text?: string | null;
        };
        SearchView: {
            matches: components["schemas"]["SearchMatch"][];
            truncated: boolean;
        };
        /** @description One secret of a request. */
        SecretRef: string | components["schemas"]["SuppliedSecret"];
        SendSignal: {
            signal: components["schemas"]["SignalName"];
        };
        /** @description What `DELETE ...?purge=true` removed. */
        SessionDeletedView: {
            /**
             * Format: u-int64
             * @description Checkpoint files (and manifests) no other checkpoint names, removed
             *     from the tenant's blob store.
             */
            blobs_removed: number;
            /** Format: u-int64 */
            bytes_freed: number;
            /** Format: u-int64 */
            checkpoints: number;
            /** @description The session, then the sessions of the subagents its runs spawned. */
            deleted: string[];
        };
        /**
         * @description A session id: ses_ and 32 lowercase hex digits.
         * @example ses_0192f5e0c1a47d2e9b3c4d5e6f708192
         */
        SessionId: string;
        SessionList: {
            next_after?: components["schemas"]["SessionId"] | null;
            sessions: components["schemas"]["SessionView"][];
        };
        /**
         * @description What a session knows about itself, updated at the end of every run and at
         *     each compaction, so an old session can be understood without its history.
         */
        SessionMemory: {
            /** @description Facts about the workspace learned on the way (build commands, layout). */
            facts?: string[];
            next_steps?: string[];
            open_questions?: string[];
            summary: string;
        };
        /** @enum {string} */
        SessionStatus: "active" | "archived";
        SessionView: {
            created_at: string;
            forked_at_run?: components["schemas"]["RunId"] | null;
            forked_from?: components["schemas"]["SessionId"] | null;
            id: components["schemas"]["SessionId"];
            memory?: components["schemas"]["SessionMemory"] | null;
            parent_run?: components["schemas"]["RunId"] | null;
            status: components["schemas"]["SessionStatus"];
            title: string;
            updated_at: string;
            workspace: components["schemas"]["WorkspaceId"];
        };
        /**
         * @description The body of `PUT /v1/sandboxes/{id}/network`: the network in the form a
         *     sandbox create takes.
         */
        SetNetwork: {
            network: components["schemas"]["NetworkPolicy"];
        };
        /** @description A signal by number (15) or name (`TERM`, `SIGTERM`). */
        SignalName: number | string;
        /**
         * @description A snapshot id: snap_ and 32 lowercase hex digits.
         * @example snap_0192f5e0c1a47d2e9b3c4d5e6f708192
         */
        SnapshotId: string;
        /**
         * @description Snapshot limits of one run: its end snapshot and its subagents'
         *     workspace copies and change sets. A missing field keeps the server's
         *     (`[snapshot]` in its config); a value is at least 1 and at most the
         *     server's `request_max_files` / `request_max_bytes`.
         */
        SnapshotLimitsRequest: {
            /**
             * Format: u-int64
             * @description Most bytes of file content, all files together.
             */
            max_bytes?: number | null;
            /**
             * Format: u-int64
             * @description Most entries (files, directories, links) a snapshot may hold.
             */
            max_files?: number | null;
        };
        SnapshotList: {
            next_after?: components["schemas"]["SnapshotId"] | null;
            snapshots: components["schemas"]["SnapshotView"][];
        };
        /** @description A volume's snapshot to make a new volume from. */
        SnapshotSource: {
            snapshot: components["schemas"]["VolumeName"];
            volume: components["schemas"]["VolumeName"];
        };
        SnapshotView: {
            /** @description sha256 of the archive, its key in the blob store. */
            blob_hash: string;
            /** Format: u-int64 */
            bytes_compressed: number;
            /** Format: u-int64 */
            bytes_raw: number;
            created_at: string;
            excludes: string[];
            /**
             * Format: u-int64
             * @description Entries a restore of the archive creates: what `max_files` counts
             *     (see [`SnapshotRecord::file_count`]).
             */
            file_count: number;
            id: components["schemas"]["SnapshotId"];
            parent?: components["schemas"]["SnapshotId"] | null;
            session?: components["schemas"]["SessionId"] | null;
            source_sandbox?: components["schemas"]["SandboxId"] | null;
            workspace?: components["schemas"]["WorkspaceId"] | null;
        };
        /** @description One server-sent event. */
        SseEvent: {
            /** @description The payload, JSON text. */
            data: string;
            /** @description The event's name. */
            event?: string;
            /** @description The position a reconnect resumes after. */
            id?: string;
            retry?: number;
        };
        /** @description A background process: its stdin stays open for later writes. */
        StartProcess: {
            argv?: string[];
            cwd?: string | null;
            env?: {
                [key: string]: string;
            };
            pty?: components["schemas"]["PtySize"] | null;
            shell?: string | null;
            /** Format: u-int64 */
            timeout_ms?: number | null;
        };
        /** @description `POST /v1/sessions/{id}/runs` */
        StartRunCommand: {
            /**
             * @description The sandbox backend of the run and its subagents (`native`,
             *     `docker`, `gvisor`), among those the server enabled; None: the
             *     server's default.
             */
            backend?: string | null;
            budgets?: components["schemas"]["Budgets"] | null;
            driver?: components["schemas"]["DriverKind"] | null;
            goal: string;
            /**
             * @description The container image, among those the server enabled for that
             *     backend; None: the backend's first.
             */
            image?: string | null;
            /** @description Extra instructions for the agent, added to its system prompt. */
            instructions?: string | null;
            mode?: components["schemas"]["RunMode"] | null;
            model: components["schemas"]["ModelChoice"];
            network?: components["schemas"]["NetworkPolicy"] | null;
            /**
             * @description Secrets injected at egress into the run's sandbox and its
             *     subagents' (each sees only a placeholder in the secret's variable):
             *     names of secrets this server defines and grants to the tenant, or
             *     the caller's own (whose value is write-only). They need a network
             *     that allows their hosts. A resumed run has none.
             */
            secrets?: components["schemas"]["SecretRef"][];
            snapshot_limits?: components["schemas"]["SnapshotLimitsRequest"] | null;
            /**
             * @description The models of some subagents, keyed by task id or profile (`explore`,
             *     `plan`, `review`, `build`; a task id wins); the others use `model`.
             *     A scripted model is replayed from its first turn for each child.
             */
            subagent_models?: {
                [key: string]: components["schemas"]["ModelChoice"];
            };
            success_criteria?: string[];
        };
        /** @description `POST /v1/runs/{id}/messages`: a message for the run's next model turn. */
        SteerRun: {
            /** @example use the v2 API instead */
            text: string;
        };
        /** @description A steering message as stored. */
        SteeringView: {
            created_at: string;
            /** Format: u-int64 */
            id: number;
            run: components["schemas"]["RunId"];
            text: string;
        };
        /**
         * @description The role of a subagent run; a root run has none.
         * @enum {string}
         */
        SubagentProfile: "explore" | "plan" | "review" | "build";
        /**
         * @description A caller's own secret. Its value is write-only: no answer, event, log
         *     line, store row or snapshot ever holds it.
         */
        SuppliedSecret: {
            /**
             * @description The one header of those requests the value goes in (the proxy
             *     refuses a request with the placeholder anywhere else): a header
             *     name, or `Name: text with {{secret}}`, a template also added when
             *     the program sent no header of that name. Default `Authorization`.
             * @example Authorization: Bearer {{secret}}
             */
            header?: string | null;
            /**
             * @description The hosts it may go to (`host`, `*.suffix`, an IP literal, with an
             *     optional `:port`; port-less means HTTPS on 443).
             * @example [
             *       "api.example.com"
             *     ]
             */
            hosts: string[];
            /**
             * @description The environment variable that holds the placeholder inside
             *     (`[A-Z_][A-Z0-9_]*`).
             * @example API_KEY
             */
            name: string;
            /** @description The value the egress proxy puts in, for the secret's hosts only. */
            value: string;
        };
        /**
         * @description The data of a process stream's `output` event (its `id` is the offset
         *     to resume after).
         */
        TerminalOutput: {
            /** @description The bytes from `offset` on, standard base64. */
            data_base64: string;
            /**
             * Format: u-int64
             * @description Bytes before `offset` that the bounded buffer no longer holds.
             */
            dropped: number;
            /**
             * Format: u-int64
             * @description Offset of the first byte of `data_base64` in the whole output.
             */
            offset: number;
        };
        /** @description `PATCH /v1/sessions/{id}` */
        UpdateSession: {
            archived?: boolean | null;
            title?: string | null;
        };
        /**
         * @description Whether a goal (or one of its criteria) is met. `unsure` is the honest
         *     answer when the run cannot show evidence either way.
         * @enum {string}
         */
        Verdict: "met" | "not_met" | "unsure";
        VolumeList: {
            next_after?: components["schemas"]["VolumeName"] | null;
            /** @description By name. */
            volumes: components["schemas"]["VolumeView"][];
        };
        /** @description A named volume mounted into a sandbox at `path`. */
        VolumeMount: {
            /** @description The tenant's volume (`POST /v1/volumes`). */
            name: string;
            /**
             * @description Where inside the sandbox: absolute and normalized, outside the
             *     places [`MOUNT_PATH_RULES`] keeps.
             */
            path: string;
            /** @description Mounted read-only (many sandboxes may; one at a time read-write). */
            read_only?: boolean;
        };
        /**
         * @description A volume's name, unique per tenant.
         * @example pip-cache
         */
        VolumeName: string;
        VolumeSnapshotList: {
            next_after?: components["schemas"]["VolumeName"] | null;
            /** @description By name. */
            snapshots: components["schemas"]["VolumeSnapshotView"][];
        };
        VolumeSnapshotView: {
            created_at: string;
            /**
             * Format: u-int64
             * @description Bytes only the snapshot holds (what deleting it frees), counted in
             *     the tenant's disk usage; only the list reads it.
             */
            exclusive_bytes?: number | null;
            name: components["schemas"]["VolumeName"];
            volume: components["schemas"]["VolumeName"];
        };
        VolumeView: {
            created_at: string;
            name: components["schemas"]["VolumeName"];
            /** Format: u-int64 */
            quota_bytes: number;
            /**
             * Format: u-int64
             * @description Bytes it holds now as its quota counts them (an empty volume's
             *     metadata counts too); only `GET /v1/volumes/{name}` reads it.
             */
            used_bytes?: number | null;
        };
        /**
         * @description A workspace id: ws_ and 32 lowercase hex digits.
         * @example ws_0192f5e0c1a47d2e9b3c4d5e6f708192
         */
        WorkspaceId: string;
        WorkspaceList: {
            next_after?: components["schemas"]["WorkspaceId"] | null;
            workspaces: components["schemas"]["WorkspaceView"][];
        };
        WorkspaceView: {
            created_at: string;
            id: components["schemas"]["WorkspaceId"];
            name: string;
            /**
             * Format: u-int64
             * @description The quota the kernel holds the workspace to (a btrfs qgroup of the
             *     volume pool); only creating and `GET /v1/workspaces/{id}` read it,
             *     and it is left out for a workspace without one.
             */
            quota_bytes?: number | null;
        };
        WriteStdin: {
            data?: string | null;
            data_base64?: string | null;
            /** @description Close the process's stdin after the data. */
            eof?: boolean;
        };
        Written: {
            /** Format: u-int64 */
            bytes: number;
            /** @description For display: bytes not in UTF-8 as `\xNN`. */
            path: string;
            /** @description The path's raw bytes in standard base64, only when it is not UTF-8. */
            path_bytes?: string | null;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    get_doctor_quarantine: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the quarantined rows, newest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["QuarantineList"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_health: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description up (no token), or healthy (with a token) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HealthView"];
                };
            };
            /** @description degraded (with a token) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HealthView"];
                };
            };
        };
    };
    get_memory: {
        parameters: {
            query?: {
                /**
                 * @description Search words: the records are ranked by relevance and recency.
                 *     Without it, the records are listed newest first.
                 */
                q?: string;
                /** @description The tenant's records and this workspace's (default: all of the tenant's). */
                workspace?: components["schemas"]["WorkspaceId"];
                /** @description With `workspace`: this project's records too. */
                project?: string;
                kind?: components["schemas"]["MemoryKind"];
                /** @description Include records proposed by runs and not approved yet. */
                proposed?: boolean;
                /** @description Include records replaced by newer ones. */
                superseded?: boolean;
                /** @description Most records, default 50. */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the records */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MemoryList"];
                };
            };
            /** @description a bad query (`invalid_request`, `invalid_id`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_memory: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AddMemory"];
            };
        };
        responses: {
            /** @description stored, active */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MemoryView"];
                };
            };
            /** @description a bad record (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such workspace or superseded record (`workspace_not_found`, `memory_not_found`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the JSON does not fit the request type (`invalid_request`): a wrong type, a missing or unknown field, or anything but an object */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description this tenant's requests in progress hold its share of request body memory (`body_budget_exceeded`, with `Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_memory_id: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["MemoryId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the record */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MemoryView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such record (`memory_not_found`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    delete_memory_id: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["MemoryId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description removed */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description a malformed id (`invalid_id`) or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such record (`memory_not_found`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_memory_id_approve: {
        parameters: {
            query?: {
                /**
                 * @description `tenant`: the record applies to every workspace of the tenant from
                 *     now on (default: the scope it was written with; a run's record is
                 *     its own workspace's).
                 */
                widen?: "tenant";
            };
            header?: never;
            path: {
                id: components["schemas"]["MemoryId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the record, active */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MemoryView"];
                };
            };
            /** @description a bad query (`invalid_request`, `invalid_id`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such record (`memory_not_found`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_openapi_json: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the OpenAPI document */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": unknown;
                };
            };
        };
    };
    get_runs_id: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["RunId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the run */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_runs_id_cancel: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["RunId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the run as it is now */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description a conflicting write (`conflict`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_runs_id_children: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["RunId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the child runs */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ChildRuns"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_runs_id_children_child_changes: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The running parent run. */
                id: components["schemas"]["RunId"];
                /** @description Its build subagent's run. */
                child: components["schemas"]["RunId"];
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["DecideChanges"];
            };
        };
        responses: {
            /** @description done: `{run_id, applied, written}` or `{run_id, rejected}` */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": Record<string, never>;
                };
            };
            /** @description a malformed id (`invalid_id`) or path; malformed JSON (`malformed_json`); a value the server refuses (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such run (`run_not_found`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the parent run is not active here (`run_not_active`), or nothing changed: a conflict, the set is not pending, the child is still running (`change_set_refused`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the JSON does not fit the request type (`invalid_request`): a wrong type, a missing or unknown field, or anything but an object */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description this tenant's requests in progress hold its share of request body memory (`body_budget_exceeded`, with `Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_runs_id_events: {
        parameters: {
            query?: {
                /** @description Only events with a higher sequence number (`Last-Event-ID` wins). */
                after?: number;
            };
            header?: {
                /** @description Resume after this sequence number (wins over `after`). */
                "Last-Event-ID"?: number;
            };
            path: {
                id: components["schemas"]["RunId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the event stream */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": components["schemas"]["SseEvent"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path; a query value the route does not take (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the tenant has `http.max_streams_per_tenant` streams open (`too_many_streams`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_runs_id_messages: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["RunId"];
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SteerRun"];
            };
        };
        responses: {
            /** @description the message, queued for the next turn */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SteeringView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path; malformed JSON (`malformed_json`); a value the server refuses (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the run has finished, or is finishing and closed its queue (`run_finished`); a message accepted before that is answered, or listed in `run.finished` as `undelivered` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the JSON does not fit the request type (`invalid_request`): a wrong type, a missing or unknown field, or anything but an object */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the run took the server's most steering messages, or characters of them, per run (`steering_limit`, naming the cap) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_runs_id_resume: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["RunId"];
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ResumeRunCommand"];
            };
        };
        responses: {
            /** @description the new run, started, with the checkpoint that kept the workspace before the restore and the undo, when it overwrote changes */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ResumedView"];
                };
            };
            /** @description a bad id or body, or a model the server does not allow (`model_not_allowed`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the interrupted run's network is beyond what this server allows tenants now (`network_not_allowed`) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the run is not interrupted, is a subagent's, its session moved on, its backend or image is not enabled here, or it ran with secrets, which are never stored (`run_not_resumable`); the session runs already (`session_busy`) or its workspace has another writer (`workspace_busy`); the workspace changed since the last checkpoint and `force` is not set (`workspace_changed`, naming the paths) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body does not fit the request type (`invalid_request`), or the model cannot be provided here (`model_unavailable`) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the resumed run's sandbox has no slot (`quota_exceeded` naming the quota, or `too_many_sandboxes`); no run is recorded */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_sandboxes: {
        parameters: {
            query?: {
                /** @description Only sandboxes in this state (sandbox listings only). */
                state?: components["schemas"]["SandboxState"];
                /** @description The last id of the previous page. */
                after?: components["schemas"]["SandboxId"];
                /** @description Page size, default 100. */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description one page */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SandboxList"];
                };
            };
            /** @description a query value the route does not take (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_sandboxes: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateSandbox"];
            };
        };
        responses: {
            /** @description running */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SandboxView"];
                };
            };
            /** @description a value the server refuses (`invalid_request`): limits, a network no backend can apply, a caller's secret that is not valid, secrets with network none */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description a network beyond what the server allows tenants (`network_not_allowed`), or a secret the server does not grant to this tenant (`secret_not_allowed`) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such workspace (`workspace_not_found`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description a read-write sandbox's workspace has another writer, a sandbox or a run (`workspace_busy`, naming it), or a conflicting write (`conflict`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the JSON does not fit the request type (`invalid_request`): a wrong type, a missing or unknown field, or anything but an object */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the server runs its limit of sandboxes (`too_many_sandboxes`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_sandboxes_id: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the sandbox */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SandboxView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    delete_sandboxes_id: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the sandbox as it ended */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SandboxView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such sandbox (`sandbox_not_found`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an agent run that is still going owns it (`sandbox_owned_by_run`); the message names the run */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_sandboxes_id_egress: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the decisions, oldest first (the last 1024) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EgressList"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such sandbox (`not_found`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is not running (`sandbox_not_running`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is paused and resuming it found no room (`too_many_sandboxes`, `quota_exceeded`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_sandboxes_id_exec: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ExecCommand"];
            };
        };
        responses: {
            /** @description how it ended, with its output; or its events as they happen */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ExecResult"];
                    "text/event-stream": components["schemas"]["SseEvent"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path; malformed JSON (`malformed_json`); a value the server refuses (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox refused: `permission_denied`, `read_only` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), or the guest refused: `already_exists`, `directory_not_empty` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`), or the guest's answer would be (`too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body does not fit the request type (`invalid_request`), or the command could not be started (`spawn_failed`) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the tenant has `http.max_streams_per_tenant` streams open (with `Accept: text/event-stream`) (`too_many_streams`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the guest did not answer in time (`timeout`) */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_sandboxes_id_files: {
        parameters: {
            query?: {
                /**
                 * @description The directory to list, relative to /workspace (default `.`);
                 *     percent-encoded bytes (`%FF`) name one not in UTF-8.
                 */
                dir?: string;
            };
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description its entries */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Listing"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path; a query value the route does not take (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox refused: `permission_denied`, `read_only` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), or the guest refused: `already_exists`, `directory_not_empty` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`), or the guest's answer would be (`too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is paused and resuming it found no room (`too_many_sandboxes`, `quota_exceeded`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the guest did not answer in time (`timeout`) */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_sandboxes_id_files_path: {
        parameters: {
            query?: {
                /** @description First byte to read (default 0). */
                offset?: number;
                /** @description Most bytes to read (default: to the end). */
                len?: number;
            };
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
                /** @description Relative to /workspace; may contain `/`; percent-encoded bytes (`%FF`) name a path not in UTF-8. Paths that leave the workspace are refused (`path_escape`). */
                path: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the bytes */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/octet-stream": components["schemas"]["Binary"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path; a query value the route does not take (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox refused: `permission_denied`, `read_only` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), or the guest refused: `already_exists`, `directory_not_empty` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`), or the guest's answer would be (`too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is paused and resuming it found no room (`too_many_sandboxes`, `quota_exceeded`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the guest did not answer in time (`timeout`) */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    put_sandboxes_id_files_path: {
        parameters: {
            query?: {
                /** @description Permission bits in octal (`644`), at most 7777. */
                mode?: string;
                /** @description Create missing parent directories (default true). */
                parents?: boolean;
            };
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
                /** @description Relative to /workspace; may contain `/`; percent-encoded bytes (`%FF`) name a path not in UTF-8. Paths that leave the workspace are refused (`path_escape`). */
                path: string;
            };
            cookie?: never;
        };
        /** @description The file's bytes; none writes an empty file */
        requestBody?: {
            content: {
                "application/octet-stream": components["schemas"]["Binary"] | null;
            };
        };
        responses: {
            /** @description written */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Written"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path; a query value the route does not take (`invalid_request`); a value the server refuses (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox refused: `permission_denied`, `read_only` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), or the guest refused: `already_exists`, `directory_not_empty` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`), or the guest's answer would be (`too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description this tenant's requests in progress hold its share of request body memory (`body_budget_exceeded`, with `Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the guest did not answer in time (`timeout`) */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    delete_sandboxes_id_files_path: {
        parameters: {
            query?: {
                /** @description Delete a directory with everything in it (default false). */
                recursive?: boolean;
            };
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
                /** @description Relative to /workspace; may contain `/`; percent-encoded bytes (`%FF`) name a path not in UTF-8. Paths that leave the workspace are refused (`path_escape`). */
                path: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description a malformed id (`invalid_id`) or path; a query value the route does not take (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox refused: `permission_denied`, `read_only` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), or the guest refused: `already_exists`, `directory_not_empty` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`), or the guest's answer would be (`too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is paused and resuming it found no room (`too_many_sandboxes`, `quota_exceeded`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the guest did not answer in time (`timeout`) */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_sandboxes_id_keepalive: {
        parameters: {
            query?: {
                /**
                 * @description Seconds more, 1 to 120 (default 120): a page that goes away asks for
                 *     a few, so that a reload takes the sandbox back and a closed tab frees
                 *     its workspace.
                 */
                secs?: number;
            };
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the sandbox */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SandboxView"];
                };
            };
            /** @description not a console sandbox, or `secs` out of range (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such sandbox (`sandbox_not_found`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description it no longer runs (`sandbox_not_running`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is paused and resuming it found no room (`too_many_sandboxes`, `quota_exceeded`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_sandboxes_id_network: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the network now */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NetworkView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such sandbox (`sandbox_not_found`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is not running (`sandbox_not_running`) or is a run's (`sandbox_owned_by_run`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is paused and resuming it found no room (`too_many_sandboxes`, `quota_exceeded`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    put_sandboxes_id_network: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SetNetwork"];
            };
        };
        responses: {
            /** @description the change made */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NetworkChanged"];
                };
            };
            /** @description a network no backend can apply (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description a network beyond what the server allows tenants (`network_not_allowed`) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such sandbox (`sandbox_not_found`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description a change a running sandbox cannot take, or a backend that cannot change it (`conflict`, saying why); the sandbox is not running (`sandbox_not_running`) or is a run's (`sandbox_owned_by_run`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the JSON does not fit the request type (`invalid_request`): a wrong type, a missing or unknown field, or anything but an object */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description this tenant's requests in progress hold its share of request body memory (`body_budget_exceeded`, with `Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_sandboxes_id_network_changes: {
        parameters: {
            query?: {
                /** @description Only changes with a higher `seq` (the last of the previous page). */
                after?: number;
                /** @description Page size, default 100. */
                limit?: number;
            };
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description one page, oldest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NetworkChangeList"];
                };
            };
            /** @description a limit outside 1 to 1000 (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such sandbox (`sandbox_not_found`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_sandboxes_id_pause: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["PauseSandbox"];
            };
        };
        responses: {
            /** @description the paused sandbox */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SandboxView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path; malformed JSON (`malformed_json`); a value the server refuses (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description its temporary workspace cannot be kept: the sandbox may not read a workspace file (`permission_denied`); it stays running */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such sandbox (`sandbox_not_found`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description it is not running (`sandbox_not_running`), already paused (`conflict`), driven by an agent run (`sandbox_owned_by_run`), or its tier cannot keep what `mode` asks (`pause_mode_unsupported`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the JSON does not fit the request type (`invalid_request`): a wrong type, a missing or unknown field, or anything but an object */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description this tenant's requests in progress hold its share of request body memory (`body_budget_exceeded`, with `Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description its temporary workspace cannot be kept: snapshots are not available (`snapshots_unavailable`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_sandboxes_id_ports_port_url: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
                port: number;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["MintPortUrl"];
            };
        };
        responses: {
            /** @description the URL */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PortUrl"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path; malformed JSON (`malformed_json`); a value the server refuses (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is not running (`sandbox_not_running`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the JSON does not fit the request type (`invalid_request`): a wrong type, a missing or unknown field, or anything but an object */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description this tenant's requests in progress hold its share of request body memory (`body_budget_exceeded`, with `Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_sandboxes_id_ports_port_path: {
        parameters: {
            query?: {
                /** @description A signed port URL's token (`POST .../url`), instead of the bearer token; also taken from the `paddock_token` cookie the first such request sets. Never passed to the server. */
                paddock_token?: string;
            };
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
                /** @description The port the server listens on inside the sandbox (127.0.0.1); 3128, the egress proxy's, is refused. */
                port: number;
                /** @description The server's path; may be empty and may contain `/`. */
                path: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the server switched protocols (WebSocket); the connection is relayed */
            101: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description the server's answer, whatever its status, headers and body */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description a port out of range or the egress proxy's (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token and no valid signed token (`unauthorized`, naming why: expired, or not this sandbox and port) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description (upgrades) the tenant has `http.max_streams_per_tenant` streams open (`too_many_streams`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description nothing listens on the port (`port_not_listening`), or the server there did not answer HTTP (`port_unreachable`) */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the guest did not answer in time (`timeout`) */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    put_sandboxes_id_ports_port_path: {
        parameters: {
            query?: {
                /** @description A signed port URL's token (`POST .../url`), instead of the bearer token; also taken from the `paddock_token` cookie the first such request sets. Never passed to the server. */
                paddock_token?: string;
            };
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
                /** @description The port the server listens on inside the sandbox (127.0.0.1); 3128, the egress proxy's, is refused. */
                port: number;
                /** @description The server's path; may be empty and may contain `/`. */
                path: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the server switched protocols (WebSocket); the connection is relayed */
            101: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description the server's answer, whatever its status, headers and body */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description a port out of range or the egress proxy's (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token and no valid signed token (`unauthorized`, naming why: expired, or not this sandbox and port) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description (upgrades) the tenant has `http.max_streams_per_tenant` streams open (`too_many_streams`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description nothing listens on the port (`port_not_listening`), or the server there did not answer HTTP (`port_unreachable`) */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the guest did not answer in time (`timeout`) */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_sandboxes_id_ports_port_path: {
        parameters: {
            query?: {
                /** @description A signed port URL's token (`POST .../url`), instead of the bearer token; also taken from the `paddock_token` cookie the first such request sets. Never passed to the server. */
                paddock_token?: string;
            };
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
                /** @description The port the server listens on inside the sandbox (127.0.0.1); 3128, the egress proxy's, is refused. */
                port: number;
                /** @description The server's path; may be empty and may contain `/`. */
                path: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the server switched protocols (WebSocket); the connection is relayed */
            101: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description the server's answer, whatever its status, headers and body */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description a port out of range or the egress proxy's (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token and no valid signed token (`unauthorized`, naming why: expired, or not this sandbox and port) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description (upgrades) the tenant has `http.max_streams_per_tenant` streams open (`too_many_streams`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description nothing listens on the port (`port_not_listening`), or the server there did not answer HTTP (`port_unreachable`) */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the guest did not answer in time (`timeout`) */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    delete_sandboxes_id_ports_port_path: {
        parameters: {
            query?: {
                /** @description A signed port URL's token (`POST .../url`), instead of the bearer token; also taken from the `paddock_token` cookie the first such request sets. Never passed to the server. */
                paddock_token?: string;
            };
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
                /** @description The port the server listens on inside the sandbox (127.0.0.1); 3128, the egress proxy's, is refused. */
                port: number;
                /** @description The server's path; may be empty and may contain `/`. */
                path: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the server switched protocols (WebSocket); the connection is relayed */
            101: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description the server's answer, whatever its status, headers and body */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description a port out of range or the egress proxy's (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token and no valid signed token (`unauthorized`, naming why: expired, or not this sandbox and port) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description (upgrades) the tenant has `http.max_streams_per_tenant` streams open (`too_many_streams`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description nothing listens on the port (`port_not_listening`), or the server there did not answer HTTP (`port_unreachable`) */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the guest did not answer in time (`timeout`) */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    patch_sandboxes_id_ports_port_path: {
        parameters: {
            query?: {
                /** @description A signed port URL's token (`POST .../url`), instead of the bearer token; also taken from the `paddock_token` cookie the first such request sets. Never passed to the server. */
                paddock_token?: string;
            };
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
                /** @description The port the server listens on inside the sandbox (127.0.0.1); 3128, the egress proxy's, is refused. */
                port: number;
                /** @description The server's path; may be empty and may contain `/`. */
                path: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the server switched protocols (WebSocket); the connection is relayed */
            101: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description the server's answer, whatever its status, headers and body */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description a port out of range or the egress proxy's (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token and no valid signed token (`unauthorized`, naming why: expired, or not this sandbox and port) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description (upgrades) the tenant has `http.max_streams_per_tenant` streams open (`too_many_streams`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description nothing listens on the port (`port_not_listening`), or the server there did not answer HTTP (`port_unreachable`) */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the guest did not answer in time (`timeout`) */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_sandboxes_id_processes: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the processes */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProcessList"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox refused: `permission_denied`, `read_only` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), or the guest refused: `already_exists`, `directory_not_empty` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`), or the guest's answer would be (`too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is paused and resuming it found no room (`too_many_sandboxes`, `quota_exceeded`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the guest did not answer in time (`timeout`) */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_sandboxes_id_processes: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["StartProcess"];
            };
        };
        responses: {
            /** @description started */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProcessView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path; malformed JSON (`malformed_json`); a value the server refuses (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox refused: `permission_denied`, `read_only` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), or the guest refused: `already_exists`, `directory_not_empty` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`), or the guest's answer would be (`too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body does not fit the request type (`invalid_request`), or the command could not be started (`spawn_failed`) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description this tenant's requests in progress hold its share of request body memory (`body_budget_exceeded`, with `Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the guest did not answer in time (`timeout`) */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_sandboxes_id_processes_handle_output: {
        parameters: {
            query?: {
                /** @description Where to start reading, in bytes of the whole output (default 0). */
                offset?: number;
                /** @description Most bytes to return (at most 4 MiB). */
                max_bytes?: number;
                /** @description How the bytes are written into `data` (default `text`). */
                encoding?: components["schemas"]["Encoding"];
            };
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
                /** @description The handle its start answered. */
                handle: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description output from `offset` on */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProcessOutputView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path; a query value the route does not take (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox refused: `permission_denied`, `read_only` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), or the guest refused: `already_exists`, `directory_not_empty` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`), or the guest's answer would be (`too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is paused and resuming it found no room (`too_many_sandboxes`, `quota_exceeded`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the guest did not answer in time (`timeout`) */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_sandboxes_id_processes_handle_resize: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
                /** @description The handle its start answered. */
                handle: number;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ResizeTerminal"];
            };
        };
        responses: {
            /** @description resized; its foreground job got SIGWINCH */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description the process has no terminal, or is unknown (`bad_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the size is out of range (`invalid_request`) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description this tenant's requests in progress hold its share of request body memory (`body_budget_exceeded`, with `Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the guest did not answer in time (`timeout`) */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_sandboxes_id_processes_handle_signal: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
                /** @description The handle its start answered. */
                handle: number;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SendSignal"];
            };
        };
        responses: {
            /** @description sent */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description a malformed id (`invalid_id`) or path; malformed JSON (`malformed_json`); a value the server refuses (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox refused: `permission_denied`, `read_only` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), or the guest refused: `already_exists`, `directory_not_empty` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`), or the guest's answer would be (`too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the JSON does not fit the request type (`invalid_request`): a wrong type, a missing or unknown field, or anything but an object */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description this tenant's requests in progress hold its share of request body memory (`body_budget_exceeded`, with `Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the guest did not answer in time (`timeout`) */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_sandboxes_id_processes_handle_stdin: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
                /** @description The handle its start answered. */
                handle: number;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["WriteStdin"];
            };
        };
        responses: {
            /** @description written */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description a malformed id (`invalid_id`) or path; malformed JSON (`malformed_json`); a value the server refuses (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox refused: `permission_denied`, `read_only` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), the process's stdin is closed (`stdin_closed`: ended, or the process stopped reading), or the guest refused: `already_exists`, `directory_not_empty` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`), or the guest's answer would be (`too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the JSON does not fit the request type (`invalid_request`): a wrong type, a missing or unknown field, or anything but an object */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description this tenant's requests in progress hold its share of request body memory (`body_budget_exceeded`, with `Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the guest did not answer in time (`timeout`) */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_sandboxes_id_processes_handle_stream: {
        parameters: {
            query?: {
                /**
                 * @description The output byte to start from (`Last-Event-ID` wins); 0, the
                 *     default, replays the scrollback the sandbox still keeps.
                 */
                offset?: number;
            };
            header?: {
                /** @description Resume at this output offset (wins over `offset`). */
                "Last-Event-ID"?: number;
            };
            path: {
                id: components["schemas"]["SandboxId"];
                /** @description The handle its start answered. */
                handle: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description `output` events, then `exit` */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": components["schemas"]["SseEvent"];
                };
            };
            /** @description unknown process or bad offset (`bad_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the tenant has `http.max_streams_per_tenant` streams open (`too_many_streams`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the guest did not answer in time (`timeout`) */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_sandboxes_id_resume: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the running sandbox */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SandboxView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such sandbox (`sandbox_not_found`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description it is not paused (`conflict`), or its workspace has another writer (`workspace_busy`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no room for it now (`too_many_sandboxes`, `quota_exceeded`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox could not be started (`sandbox_start_failed`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_sandboxes_id_search: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SearchCommand"];
            };
        };
        responses: {
            /** @description the matches */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SearchView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path; malformed JSON (`malformed_json`); a value the server refuses (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox refused: `permission_denied`, `read_only` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), or the guest refused: `already_exists`, `directory_not_empty` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`), or the guest's answer would be (`too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the JSON does not fit the request type (`invalid_request`): a wrong type, a missing or unknown field, or anything but an object */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description this tenant's requests in progress hold its share of request body memory (`body_budget_exceeded`, with `Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the guest did not answer in time (`timeout`) */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_sandboxes_id_snapshots: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateSnapshot"];
            };
        };
        responses: {
            /** @description stored */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SnapshotView"];
                };
            };
            /** @description a bad id or body, or the workspace is over the asked limits (`archive_refused`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox may not read a workspace file (`permission_denied`) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), or a conflicting write (`conflict`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the JSON does not fit the request type (`invalid_request`): a wrong type, a missing or unknown field, or anything but an object */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description this tenant's requests in progress hold its share of request body memory (`body_budget_exceeded`, with `Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the guest did not answer in time (`timeout`) */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_sandboxes_id_tunnel_port: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SandboxId"];
                port: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description switched to `paddock-tcp`: the bytes of the connection follow */
            101: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description no `paddock-tcp` upgrade asked for, or a port out of range or the egress proxy's (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the sandbox is not running (`sandbox_not_running`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the tenant has `http.max_streams_per_tenant` streams open (`too_many_streams`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description nothing listens on the port (`port_not_listening`) */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the guest did not answer in time (`timeout`) */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_sessions: {
        parameters: {
            query?: {
                /** @description Only the sessions of this workspace. */
                workspace?: components["schemas"]["WorkspaceId"];
                /** @description The last id of the previous page. */
                after?: components["schemas"]["SessionId"];
                /** @description Page size, default 100. */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description one page */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SessionList"];
                };
            };
            /** @description a query value the route does not take (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_sessions: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateSession"];
            };
        };
        responses: {
            /** @description created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SessionView"];
                };
            };
            /** @description malformed JSON (`malformed_json`); a value the server refuses (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such workspace (`workspace_not_found`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description a conflicting write (`conflict`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the JSON does not fit the request type (`invalid_request`): a wrong type, a missing or unknown field, or anything but an object */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description this tenant's requests in progress hold its share of request body memory (`body_budget_exceeded`, with `Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_sessions_id: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SessionId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the session */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SessionView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    delete_sessions_id: {
        parameters: {
            query?: {
                /** @description Delete the session for good instead of archiving it. */
                purge?: boolean;
                /**
                 * @description With `purge`: cancel the session's unfinished runs first (and wait
                 *     up to 30 s for them to end) instead of refusing.
                 */
                force?: boolean;
            };
            header?: never;
            path: {
                id: components["schemas"]["SessionId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the session, archived; or, with `purge`, what was deleted */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeleteAnswer"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path; a query value the route does not take (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the session is archived (`session_archived`) or runs already (`session_busy`), it is forked or has unfinished runs (`session_in_use`, with `purge`), or a conflicting write (`conflict`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    patch_sessions_id: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SessionId"];
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UpdateSession"];
            };
        };
        responses: {
            /** @description the session as it is now */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SessionView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path; malformed JSON (`malformed_json`); a value the server refuses (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the session is archived (`session_archived`) or runs already (`session_busy`), or a conflicting write (`conflict`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the JSON does not fit the request type (`invalid_request`): a wrong type, a missing or unknown field, or anything but an object */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description this tenant's requests in progress hold its share of request body memory (`body_budget_exceeded`, with `Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_sessions_id_checkpoints: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SessionId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the checkpoints */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CheckpointList"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_sessions_id_diff: {
        parameters: {
            query?: {
                /** @description From this checkpoint (default: the one before `to`, or the latest). */
                from?: components["schemas"]["CheckpointId"];
                /** @description To this checkpoint (default: the workspace as it is now). */
                to?: components["schemas"]["CheckpointId"];
            };
            header?: never;
            path: {
                id: components["schemas"]["SessionId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the changes */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CheckpointDiffView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path; a query value the route does not take (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such checkpoint of the session (`checkpoint_not_found`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_sessions_id_events: {
        parameters: {
            query?: {
                /** @description Only events with a higher sequence number (`Last-Event-ID` wins). */
                after?: number;
                /** @description End the stream after the next `run.finished`, or once the stored events were sent. */
                until?: "run_finished" | "caught_up";
            };
            header?: {
                /** @description Resume after this sequence number (wins over `after`). */
                "Last-Event-ID"?: number;
            };
            path: {
                id: components["schemas"]["SessionId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the event stream */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": components["schemas"]["SseEvent"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path; a query value the route does not take (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the tenant has `http.max_streams_per_tenant` streams open (`too_many_streams`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_sessions_id_fork: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SessionId"];
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ForkSession"];
            };
        };
        responses: {
            /** @description the new session */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SessionView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path; malformed JSON (`malformed_json`); a value the server refuses (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the run left no end snapshot (`no_end_snapshot`), or a conflicting write (`conflict`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the JSON does not fit the request type (`invalid_request`): a wrong type, a missing or unknown field, or anything but an object */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description this tenant's requests in progress hold its share of request body memory (`body_budget_exceeded`, with `Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_sessions_id_rewind: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SessionId"];
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RewindSession"];
            };
        };
        responses: {
            /** @description the rewind */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RewindView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path; malformed JSON (`malformed_json`); a value the server refuses (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such checkpoint of the session (`checkpoint_not_found`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the session runs (`session_busy`), is archived (`session_archived`), its workspace has another writer (`workspace_busy`), or it changed since the session's last checkpoint and `force` is not set (`workspace_changed`, naming the paths) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the JSON does not fit the request type (`invalid_request`): a wrong type, a missing or unknown field, or anything but an object */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description this tenant's requests in progress hold its share of request body memory (`body_budget_exceeded`, with `Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_sessions_id_runs: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SessionId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the runs */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunList"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_sessions_id_runs: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SessionId"];
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["StartRunCommand"];
            };
        };
        responses: {
            /** @description started, or `queued` where the server queues runs that find no slot (`[runs] when_full = "queue"`) */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunView"];
                };
            };
            /** @description a bad id or body, or a model the server does not allow (`model_not_allowed`); a caller's secret that is not valid, or secrets with network none (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description a network beyond what the server allows tenants (`network_not_allowed`), or a secret the server does not grant to this tenant (`secret_not_allowed`) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the session is archived (`session_archived`) or runs already (`session_busy`), a build run's workspace has another writer (`workspace_busy`, naming it), or a conflicting write (`conflict`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body does not fit the request type (`invalid_request`), or the model cannot be provided here (`model_unavailable`) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the run's sandbox has no slot: a tenant or node quota (`quota_exceeded`, naming it: `sandboxes`, `runs`, ...) or the node's `max_sandboxes` (`too_many_sandboxes`), where the server refuses such runs; the tenant's run queue is full (`queue_full`), where it queues them; no run is recorded */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_snapshots: {
        parameters: {
            query?: {
                /** @description The last id of the previous page. */
                after?: components["schemas"]["SnapshotId"];
                /** @description Page size, default 100. */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description one page */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SnapshotList"];
                };
            };
            /** @description a query value the route does not take (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_snapshots: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                max_files: number | null;
                max_bytes: number | null;
            };
            cookie?: never;
        };
        /** @description The archive; any content type is read as its bytes */
        requestBody: {
            content: {
                "application/octet-stream": components["schemas"]["Binary"];
                "application/zstd": components["schemas"]["Binary"];
            };
        };
        responses: {
            /** @description stored */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SnapshotView"];
                };
            };
            /** @description a bad query, or the archive is unreadable or over 1 GiB (`upload_failed`) or refused (`archive_refused`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description a conflicting write (`conflict`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description this tenant's requests in progress hold its share of request body memory (`body_budget_exceeded`, with `Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_snapshots_id: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SnapshotId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the snapshot */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SnapshotView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    delete_snapshots_id: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SnapshotId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the snapshot as it was */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SnapshotView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description a conflicting write (`conflict`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_snapshots_id_archive: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SnapshotId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the archive */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/zstd": components["schemas"]["Binary"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_snapshots_id_restore: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["SnapshotId"];
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RestoreSnapshot"];
            };
        };
        responses: {
            /** @description the sandboxes, running */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Restored"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path; malformed JSON (`malformed_json`); a value the server refuses (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description a conflicting write (`conflict`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the JSON does not fit the request type (`invalid_request`): a wrong type, a missing or unknown field, or anything but an object */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the server runs its limit of sandboxes (`too_many_sandboxes`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_volumes: {
        parameters: {
            query?: {
                /** @description The last name of the previous page. */
                after?: components["schemas"]["VolumeName"];
                /** @description Page size, default 100. */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description one page */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["VolumeList"];
                };
            };
            /** @description a query value the route does not take (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_volumes: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateVolume"];
            };
        };
        responses: {
            /** @description created, empty */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["VolumeView"];
                };
            };
            /** @description a bad name or a quota out of bounds (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `from_snapshot` names no snapshot of the tenant's (`volume_snapshot_not_found`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the tenant has a volume of that name (`conflict`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the JSON does not fit the request type (`invalid_request`): a wrong type, a missing or unknown field, or anything but an object */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description this tenant's requests in progress hold its share of request body memory (`body_budget_exceeded`, with `Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the server has no volume host (`volumes_unavailable`) or it failed, its quota included (`volume_failed`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_volumes_name: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: components["schemas"]["VolumeName"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the volume */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["VolumeView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the server has no volume host (`volumes_unavailable`) or it failed (`volume_failed`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    delete_volumes_name: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: components["schemas"]["VolumeName"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the volume as it was */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["VolumeView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the volume has snapshots; delete them first (`conflict`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the server has no volume host (`volumes_unavailable`) or it failed (`volume_failed`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_volumes_name_snapshots: {
        parameters: {
            query?: {
                /** @description The last name of the previous page. */
                after?: components["schemas"]["VolumeName"];
                /** @description Page size, default 100. */
                limit?: number;
            };
            header?: never;
            path: {
                name: components["schemas"]["VolumeName"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description one page */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["VolumeSnapshotList"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path; a query value the route does not take (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such volume (`volume_not_found`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the server has no volume host (`volumes_unavailable`) or it failed (`volume_failed`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_volumes_name_snapshots: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: components["schemas"]["VolumeName"];
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateVolumeSnapshot"];
            };
        };
        responses: {
            /** @description taken */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["VolumeSnapshotView"];
                };
            };
            /** @description a bad name (`invalid_request`, `invalid_id`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such volume (`volume_not_found`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the volume has a snapshot of that name (`conflict`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the JSON does not fit the request type (`invalid_request`): a wrong type, a missing or unknown field, or anything but an object */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description this tenant's requests in progress hold its share of request body memory (`body_budget_exceeded`, with `Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the server has no volume host (`volumes_unavailable`) or it failed (`volume_failed`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    delete_volumes_name_snapshots_snapshot: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: components["schemas"]["VolumeName"];
                snapshot: components["schemas"]["VolumeName"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the snapshot as it was */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["VolumeSnapshotView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such snapshot (`volume_snapshot_not_found`) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the server has no volume host (`volumes_unavailable`) or it failed (`volume_failed`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_workspaces: {
        parameters: {
            query?: {
                /** @description The last id of the previous page. */
                after?: components["schemas"]["WorkspaceId"];
                /** @description Page size, default 100. */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description one page */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WorkspaceList"];
                };
            };
            /** @description a query value the route does not take (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_workspaces: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateWorkspace"];
            };
        };
        responses: {
            /** @description created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WorkspaceView"];
                };
            };
            /** @description malformed JSON (`malformed_json`); a value the server refuses (`invalid_request`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is larger than the server accepts (`payload_too_large`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body is not `Content-Type: application/json` (`unsupported_media_type`) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the JSON does not fit the request type (`invalid_request`): a wrong type, a missing or unknown field, or anything but an object */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description this tenant's requests in progress hold its share of request body memory (`body_budget_exceeded`, with `Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    post_workspaces_import: {
        parameters: {
            query?: {
                /** @description The workspace's name (default "upload"). */
                name?: string;
                /** @description Most entries the archive may hold. */
                max_files?: number;
                /** @description Most file bytes before compression. */
                max_bytes?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description The archive; any content type is read as its bytes */
        requestBody: {
            content: {
                "application/octet-stream": components["schemas"]["Binary"];
                "application/zstd": components["schemas"]["Binary"];
            };
        };
        responses: {
            /** @description created, holding the archive's files */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WorkspaceView"];
                };
            };
            /** @description a bad query, or the archive is unreadable or over 1 GiB (`upload_failed`) or refused: hostile, or over its limits (`archive_refused`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the body did not keep pace (`body_timeout`): a piece at least every `http.body_timeout_secs`, all of it within that plus 1 s per `http.body_min_bytes_per_sec` bytes; the connection closes */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description a conflicting write (`conflict`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the tenant's disk quota is used up (`disk_quota_exceeded`) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description this tenant's requests in progress hold its share of request body memory (`body_budget_exceeded`, with `Retry-After`) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_workspaces_id: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["WorkspaceId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the workspace */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WorkspaceView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    delete_workspaces_id: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: components["schemas"]["WorkspaceId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the deleted workspace */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WorkspaceView"];
                };
            };
            /** @description a malformed id (`invalid_id`) or path */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description a session not archived works in it (`workspace_in_use`), one of its archived sessions was forked into another workspace (`session_in_use`), or a running sandbox uses it (`conflict`) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_workspaces_id_archive: {
        parameters: {
            query?: {
                /** @description Most entries the archive may hold. */
                max_files?: number;
                /** @description Most file bytes before compression. */
                max_bytes?: number;
            };
            header?: never;
            path: {
                id: components["schemas"]["WorkspaceId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the archive */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/zstd": components["schemas"]["Binary"];
                };
            };
            /** @description a bad query, or the workspace is over the limits (`archive_refused`) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no valid bearer token (`unauthorized`); the answer carries `WWW-Authenticate: Bearer` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such route, or nothing of that id for this tenant (`sandbox_not_found`, `session_not_found`, `file_not_found`, ...) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description an internal failure (`internal`); the server log has the details */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (`database_unavailable`), the server is shutting down (`shutting_down`), a sandbox could not start (`sandbox_start_failed`), (session and run routes) the server runs no agents (`agents_unavailable`), or (routes with a body) the server holds as many request bodies as it may (`busy`, with `Retry-After`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
}

/* Requests: each frame decoded and routed to its family's handler.
 *
 * request.c decodes the frame into the connection's arena, turns away what may
 * not run now (the server is shutting down, or Hello has not been done) and
 * calls the handler of the request's body (request_handlers.h):
 *
 *   Hello                              request_hello.c
 *   MeshPut, MeshList, MeshDelete      request_mesh.c
 *   ScenePut, SceneList, SceneDelete   request_scene.c
 *   Query                              request_query.c
 *   Stats                              stats.c
 *
 * Loop thread only (apart from tdm_request_query_packed). A request that fails
 * validation gets an Error naming the field and element and changes nothing. */
#ifndef TDM_DAEMON_REQUEST_H
#define TDM_DAEMON_REQUEST_H

#include "conn.h"

/* Handles one frame (the bytes are only read during the call). */
void tdm_request_handle(tdm_conn *c, const uint8_t *frame, size_t len);
/* Handles a frame decoded already into c->arena (tdm_decode_request: req, or NULL and why): what
 * tdm_request_handle does after its decode (conn.c decodes large frames on libuv's pool). */
void tdm_request_dispatch(tdm_conn *c, Tandem__V1__Request *req, const char *why);
/* Answers one frame with ERROR_BUSY (the server is shutting down). */
void tdm_request_refuse(tdm_conn *c, const uint8_t *frame, size_t len);
/* The query pool's callbacks (request_query.c; data: the server): packed runs
 * on the pooler thread that ran the job (it packs the reply), done on the loop
 * (it sends it). */
void tdm_request_query_packed(tdm_query_job *job, void *data);
/* Pooler thread, after the job is handed back (query_pool.h's sender): writes the packed
 * reply to the socket when the connection lets it (tdm_conn_reply_direct). */
void tdm_request_query_send(tdm_query_job *job, void *data);
void tdm_request_query_done(tdm_query_job *job, void *data);

#endif

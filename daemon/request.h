/* What each Request does: validation, the store, handing queries to the
 * dispatcher and store changes to the storage thread, and their replies.
 *
 * Loop thread only. A request that fails validation gets an Error naming the
 * field and element and changes nothing. */
#ifndef TDM_DAEMON_REQUEST_H
#define TDM_DAEMON_REQUEST_H

#include "conn.h"

/* Handles one frame (the bytes are only read during the call). */
void tdm_request_handle(tdm_conn *c, const uint8_t *frame, size_t len);
/* Answers one frame with ERROR_BUSY (the server is shutting down). */
void tdm_request_refuse(tdm_conn *c, const uint8_t *frame, size_t len);
/* The dispatcher's callbacks (data: the server): packed runs on the
 * dispatcher thread (it packs the reply), done on the loop (it sends it). */
void tdm_request_query_packed(tdm_query_job *job, void *data);
void tdm_request_query_done(tdm_query_job *job, void *data);

#endif

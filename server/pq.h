/* server/pq.h — libpq, loaded when a PostgreSQL store is opened.
 *
 * chidori-broker starts for every run and every server, and libpq brings
 * OpenSSL, Kerberos, LDAP, SASL, GnuTLS and fifteen more libraries with it:
 * 12.5 ms of CPU at every start on the bench machine, for a store only
 * `serve --store postgres://` uses (docs/decisions.md 165).  store-pg.c
 * includes this header instead of <libpq-fe.h>: the library's types are
 * declared as usual and each PQ function it calls becomes a call through a
 * table pq_load() fills with dlopen("libpq.so.5").  A function used there
 * and missing from the table is a link error (the broker links no libpq). */
#ifndef CHIDORI_SERVER_PQ_H
#define CHIDORI_SERVER_PQ_H

#include <libpq-fe.h>

#include "common/err.h"

#define PQ_FUNCS(X) X(PQclear) X(PQgetvalue) X(PQntuples) X(PQcmdTuples) X(PQgetisnull) X(PQresultStatus) X(PQexec) X(PQstatus) X(PQsocket) X(PQresultErrorMessage) X(PQresultErrorField) X(PQreset) X(PQhost) X(PQgetlength) X(PQfreemem) X(PQfinish) X(PQexecParams) X(PQerrorMessage) X(PQconsumeInput) X(PQconninfoParse) X(PQconninfoFree) X(PQconnectdbParams)

struct pq_api {
#define PQ_FIELD(fn) __typeof__(&fn) fn;
        PQ_FUNCS(PQ_FIELD)
#undef PQ_FIELD
};

extern struct pq_api pq_api;

/* Open libpq (once per process).  -1: not installed (err says which
 * package), or a function missing. */
int pq_load(struct err **err);

#ifndef CHIDORI_PQ_IMPL
#define PQclear pq_api.PQclear
#define PQgetvalue pq_api.PQgetvalue
#define PQntuples pq_api.PQntuples
#define PQcmdTuples pq_api.PQcmdTuples
#define PQgetisnull pq_api.PQgetisnull
#define PQresultStatus pq_api.PQresultStatus
#define PQexec pq_api.PQexec
#define PQstatus pq_api.PQstatus
#define PQsocket pq_api.PQsocket
#define PQresultErrorMessage pq_api.PQresultErrorMessage
#define PQresultErrorField pq_api.PQresultErrorField
#define PQreset pq_api.PQreset
#define PQhost pq_api.PQhost
#define PQgetlength pq_api.PQgetlength
#define PQfreemem pq_api.PQfreemem
#define PQfinish pq_api.PQfinish
#define PQexecParams pq_api.PQexecParams
#define PQerrorMessage pq_api.PQerrorMessage
#define PQconsumeInput pq_api.PQconsumeInput
#define PQconninfoParse pq_api.PQconninfoParse
#define PQconninfoFree pq_api.PQconninfoFree
#define PQconnectdbParams pq_api.PQconnectdbParams
#endif

#endif

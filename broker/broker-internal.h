/* broker/broker-internal.h — state shared by the broker's own files only. */
#ifndef CHIDORI_BROKER_INTERNAL_H
#define CHIDORI_BROKER_INTERNAL_H

#include "broker/broker.h"
#include "proto/proto.h"

struct broker {
        const struct broker_config *cfg;
        const struct broker_peer *peer;
        struct frame_reader reader;
        int64_t last_id;          /* ids must arrive as 1, 2, 3, ... */
        uint64_t outstanding;     /* calls asked, not yet answered */
        uint64_t seq;             /* answers delivered (journal seq) */
        size_t answer_idx;        /* next --answers entry (array form) */
        size_t replay_next;       /* next journal entry to deliver */
        struct broker_outcome *out;
        bool finished;
        char errbuf[64];
};

/* One host call handler: validate args (shape), perform, answer.
 * Returning -1 with err set answers the agent with an Error it can catch. */
typedef int (*effect_fn)(struct broker *b, const struct cJSON *args, struct cJSON **ret_value,
                         struct err **err);

struct effect {
        const char *op;
        effect_fn fn;
};

/* Look an op up in the dispatch table (broker/effects.c); NULL if unknown. */
const struct effect *broker_effect_find(const char *op);

/* Write a journal note line (denials, warnings); best effort. */
void broker_journal_note(struct broker *b, const char *kind, const char *message);

#endif

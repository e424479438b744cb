/* effects/effects.h — what an embedder of the session engine needs of the
 * effects: the table to put in struct session_config.effects (every op
 * chidori provides and the families behind them; effects/core.c). */
#ifndef CHIDORI_EFFECTS_EFFECTS_H
#define CHIDORI_EFFECTS_EFFECTS_H

struct effect_table;
extern const struct effect_table effects_table;

#endif

/* Device slots: the devices of a run, each handed to one evaluation at a
 * time, in the order the evaluations asked (DESIGN.md §1: devices are slots
 * the pipeline hands out). An evaluation asks when its device work is about
 * to start (its compile done), so compiles and other host work overlap the
 * device work of others; the evaluator stops its clock while it waits. */
#ifndef KV_EVAL_SLOTS_H
#define KV_EVAL_SLOTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct kv_slots kv_slots;

/* Slots for DEVICES[0..N) (copied; N >= 1). */
kv_slots *kv_slots_new(const int *devices, size_t n);
void kv_slots_free(kv_slots *s);

/* Binds evaluation TICKET to a device before it asks (once; the same
 * device after): the device in rotation with the fewest evaluations bound,
 * so that it can open its contexts and start its runner there while
 * another evaluation holds the device. Returns the device, or -1 when none
 * is in rotation. A bound evaluation's ask waits for its device alone
 * (for any device if its own was taken out of rotation meanwhile); the
 * binding ends with the release. */
int kv_slots_bind(kv_slots *s, int64_t ticket);
/* The device TICKET is bound to, or -1. */
int kv_slots_bound(const kv_slots *s, int64_t ticket);
/* Evaluation TICKET asks for a device: it waits in line (once). */
void kv_slots_ask(kv_slots *s, int64_t ticket);
/* TICKET is done with its device, or gone: its slot (or its place in line)
 * and its binding are given up. Returns 1 when it held a device. */
int kv_slots_release(kv_slots *s, int64_t ticket);
/* Hands a free device to the first in line that can take it (its bound
 * device, else the free device that waited longest): 1 with
 * *TICKET and *DEVICE set, 0 when no device is free or no one waits. */
int kv_slots_grant(kv_slots *s, int64_t *ticket, int *device);
/* The device TICKET holds, or -1. */
int kv_slots_held(const kv_slots *s, int64_t ticket);
/* Takes DEVICE out of rotation (it is never handed out again; one holding
 * it keeps it until it lets go). Returns the devices left in rotation. */
size_t kv_slots_take_out(kv_slots *s, int device);
/* The devices still in rotation (0 for no slots). */
size_t kv_slots_in_rotation(const kv_slots *s);
/* Devices held and evaluations waiting, for progress and tests. */
size_t kv_slots_busy(const kv_slots *s);
size_t kv_slots_waiting(const kv_slots *s);

#endif

/* sim_sched.c - the simulated GPU's time-slicing (CARVE_SIM_TIMESLICE_US): the kernels of
 * different processes on one device take turns in slices, as a GPU without MPS runs its
 * contexts, instead of queueing one after another. A kernel's end is then known only once it
 * has run: a later launch of another process can still stretch it. So a launch gets a ticket
 * (a mark with SIM_TICKET set, simdev.h) that resolves to an end when asked. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "simdev.h"

static uint32_t unit_key_now(struct sim_shared *s, uint32_t key)
{
    uint32_t index = (key & 1023u) - 1;
    if (index >= SIM_MAX_PROCS || atomic_load(&s->proc[index].pid) <= 0)
        return 0;
    return SIM_RING_KEY(index, atomic_load(&s->proc[index].gen));
}

/* After a process died holding the lock: a kernel it was queueing (its slot taken, not yet
 * on its unit's list) would never run, and its slot block every launch that comes to it.
 * The dead process's queued kernels are dropped once its entry is reaped (drop_units). */
static void repair(struct sim_timeline *t)
{
    static _Thread_local bool listed[SIM_QUEUE];
    memset(listed, 0, sizeof(listed));
    for (uint32_t i = 0; i < t->nunits; i++)
        for (uint32_t k = t->units[i].head; k; k = t->queue[k - 1].next)
            listed[k - 1] = true;
    for (uint32_t k = 0; k < SIM_QUEUE; k++)
        if (t->queue[k].seq && !t->queue[k].end_ns && !listed[k])
            t->queue[k].end_ns = t->base_ns ? t->base_ns : 1;
}

static void timeline_lock(struct sim_timeline *t)
{
    if (pthread_mutex_lock(&t->lock) == EOWNERDEAD) {
        repair(t);
        pthread_mutex_consistent(&t->lock);
    }
}

void sim_timeline_init(struct sim_timeline *t)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&t->lock, &a);
    pthread_mutexattr_destroy(&a);
    t->next_seq = 1;
}

/* Whether kernel seq has ended, and when (*end), as far as its slot remembers: it and the
 * kernel before it there, 2 x SIM_QUEUE launches. One older is taken as ended now. */
static bool kernel_ended(const struct sim_timeline *t, uint64_t seq, uint64_t now,
                         uint64_t *end)
{
    const struct sim_queued *k = &t->queue[seq % SIM_QUEUE];
    if (k->seq == seq) {
        *end = k->end_ns;
        return k->end_ns != 0;
    }
    *end = k->prev_seq == seq ? k->prev_end_ns : now;
    return true;
}

/* Notes that unit ran on dev from a to b: NVML's utilisation and the process's busy time. */
static void note_run(struct sim_shared *s, int dev, uint32_t unit, uint64_t a, uint64_t b)
{
    if (b <= a)
        return;
    struct sim_device_state *d = &s->dev[dev];
    uint64_t head = atomic_load(&d->ring_head);
    struct sim_interval *last = head ? &d->ring[(head - 1) % SIM_RING] : NULL;
    if (last && atomic_load(&last->entry) == unit && atomic_load(&last->end_ns) == a)
        atomic_store(&last->end_ns, b); /* the same turn, seen in two steps */
    else {
        struct sim_interval *r = &d->ring[atomic_fetch_add(&d->ring_head, 1) % SIM_RING];
        atomic_store(&r->start_ns, a);
        atomic_store(&r->end_ns, b);
        atomic_store(&r->entry, unit);
    }
    uint32_t index = (unit & 1023u) - 1;
    if (index < SIM_MAX_PROCS && unit_key_now(s, unit) == unit)
        atomic_fetch_add(&s->proc[index].busy_ns[dev], b - a);
}

/* Drops the units whose processes are gone (a real driver tears their contexts down with
 * their work) and those with nothing queued, keeping the turn where it is: with the running
 * unit dropped, the next turn is the next unit's. */
static void drop_units(struct sim_shared *s, struct sim_timeline *t, uint64_t now)
{
    uint32_t keep = 0, current = t->current, look = current ? current - 1 : t->resume;
    t->current = 0;
    t->resume = 0;
    for (uint32_t i = 0; i < t->nunits; i++) {
        struct sim_unit *u = &t->units[i];
        if (u->head && unit_key_now(s, u->key) != u->key) {
            for (uint32_t k = u->head; k; k = t->queue[k - 1].next)
                t->queue[k - 1].end_ns = now ? now : 1;
            u->head = u->tail = 0;
        }
        if (i == look)
            t->resume = keep; /* the first unit kept from the one to look at on */
        if (!u->head)
            continue;
        if (current == i + 1)
            t->current = keep + 1;
        t->units[keep++] = *u;
    }
    t->nunits = keep;
    if (t->resume >= keep)
        t->resume = 0;
    if (!t->current)
        t->slice_used_ns = 0;
}

/* Where the turns go on from: the unit after the running one, else the one to resume at. */
static uint32_t turn_from(const struct sim_timeline *t)
{
    return t->current ? t->current : t->resume;
}

/* The next unit in the order they came, from turn_from(), that has work; 0 when none. */
static uint32_t next_unit(const struct sim_timeline *t)
{
    for (uint32_t step = 0; step < t->nunits; step++) {
        uint32_t i = (turn_from(t) + step) % t->nunits;
        if (t->units[i].head)
            return i + 1;
    }
    return 0;
}

/* Runs the timeline from its base to `to`, ending kernels as they end. */
static void advance(struct sim_shared *s, int dev, struct sim_timeline *t, uint64_t to)
{
    uint64_t slice = sim_config()->timeslice_ns, now = t->base_ns;
    drop_units(s, t, now);
    while (now < to) {
        if (!t->current || !t->units[t->current - 1].head) {
            t->current = next_unit(t);
            t->slice_used_ns = 0;
            if (!t->current)
                break; /* idle */
        }
        struct sim_unit *u = &t->units[t->current - 1];
        if (t->slice_used_ns >= slice) {
            uint32_t next = next_unit(t);
            t->slice_used_ns = 0;
            if (next != t->current) {
                t->current = next;
                continue;
            }
        }
        struct sim_queued *k = &t->queue[u->head - 1];
        uint64_t run = k->left_ns;
        if (run > slice - t->slice_used_ns)
            run = slice - t->slice_used_ns;
        if (run > to - now)
            run = to - now;
        note_run(s, dev, u->key, now, now + run);
        now += run;
        t->slice_used_ns += run;
        k->left_ns -= run;
        if (k->left_ns == 0) {
            k->end_ns = now ? now : 1;
            u->head = k->next;
            if (!u->head)
                u->tail = 0;
        }
    }
    t->base_ns = to > t->base_ns ? to : t->base_ns;
    drop_units(s, t, t->base_ns);
}

/* When the unit of kernel `target` will have had all its work up to and including it, if no
 * more work comes: turns, as advance() takes them, over the units' queued totals. A unit with
 * kernels queued takes its turn even when they hold no work (empty kernels). */
static uint64_t predict_end(const struct sim_timeline *t, const struct sim_queued *target)
{
    uint64_t slice = sim_config()->timeslice_ns, now = t->base_ns;
    uint64_t left[SIM_TIMELINE_UNITS], want = 0;
    bool queued[SIM_TIMELINE_UNITS];
    uint32_t mine = 0, n = t->nunits;
    for (uint32_t i = 0; i < n; i++) {
        left[i] = 0;
        queued[i] = t->units[i].head != 0;
        for (uint32_t k = t->units[i].head; k; k = t->queue[k - 1].next) {
            left[i] += t->queue[k - 1].left_ns;
            if (&t->queue[k - 1] == target) {
                mine = i + 1;
                want = left[i];
            }
        }
    }
    if (!mine)
        return now;
    uint32_t at = t->current ? t->current - 1 : (turn_from(t) + n - 1) % n;
    uint64_t used = t->current ? t->slice_used_ns : slice, got = 0;
    for (;;) {
        if (used >= slice || !queued[at]) { /* the next unit with kernels, this one last */
            uint32_t step = 1;
            while (step <= n && !queued[(at + step) % n])
                step++;
            if (step > n)
                return now; /* not reached: the target's unit has kernels */
            at = (at + step) % n;
            used = 0;
        }
        uint64_t run = left[at] < slice - used ? left[at] : slice - used;
        if (at == mine - 1 && got + run >= want)
            return now + (want - got);
        now += run;
        used += run;
        left[at] -= run;
        if (at == mine - 1)
            got += run;
        if (!left[at])
            queued[at] = false;
    }
}

uint64_t sim_timeline_run(struct sim_shared *s, int dev, uint64_t ns)
{
    struct sim_timeline *t = &s->timeline[dev];
    struct sim_proc *p = sim_self();
    uint32_t key = p ? SIM_RING_KEY(p - s->proc, atomic_load(&p->gen)) : 0;
    for (;;) {
        timeline_lock(t);
        uint64_t now = sim_now_ns();
        advance(s, dev, t, now);
        struct sim_unit *u = NULL;
        for (uint32_t i = 0; i < t->nunits && !u; i++)
            if (t->units[i].key == key)
                u = &t->units[i];
        if (!u && !t->nunits && ns == 0) { /* nothing queued anywhere: done as it comes */
            pthread_mutex_unlock(&t->lock);
            return now;
        }
        struct sim_queued *k = &t->queue[t->next_seq % SIM_QUEUE];
        bool room = (k->seq == 0 || k->end_ns) && (u || t->nunits < SIM_TIMELINE_UNITS);
        if (!room) { /* as a driver whose command queue is full: the launch blocks */
            pthread_mutex_unlock(&t->lock);
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
            continue;
        }
        if (!u) {
            u = &t->units[t->nunits++];
            *u = (struct sim_unit){.key = key};
        }
        uint64_t seq = t->next_seq++;
        *k = (struct sim_queued){.seq = seq, .left_ns = ns, .prev_seq = k->seq,
                                 .prev_end_ns = k->end_ns};
        uint32_t index = (uint32_t)(k - t->queue) + 1;
        if (u->tail)
            t->queue[u->tail - 1].next = index;
        else
            u->head = index;
        u->tail = index;
        pthread_mutex_unlock(&t->lock);
        return SIM_TICKET | seq;
    }
}

uint64_t sim_timeline_end(struct sim_shared *s, int dev, uint64_t mark, bool *done)
{
    struct sim_timeline *t = &s->timeline[dev];
    uint64_t seq = mark & ~SIM_TICKET;
    timeline_lock(t);
    uint64_t now = sim_now_ns(), end;
    advance(s, dev, t, now);
    *done = kernel_ended(t, seq, now, &end);
    if (!*done)
        end = predict_end(t, &t->queue[seq % SIM_QUEUE]);
    pthread_mutex_unlock(&t->lock);
    return end;
}

void sim_timeline_settle(struct sim_shared *s, int dev)
{
    struct sim_timeline *t = &s->timeline[dev];
    timeline_lock(t);
    advance(s, dev, t, sim_now_ns());
    pthread_mutex_unlock(&t->lock);
}

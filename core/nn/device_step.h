/* device_step.h — streams, events and queued copies of a dt_device_t, for
 * the device-resident training step (internal to libdt: grad_sync, the
 * model, the trainer). On cpu they are no-ops (events and streams are
 * NULL; a copy is memmove, a scale a loop); on cuda they go to the
 * backend's last block (cuda/backend.h), which makes the device current
 * on the calling thread first, so the gradient thread may call them. */
#ifndef DT_NN_DEVICE_STEP_H
#define DT_NN_DEVICE_STEP_H

#include <stddef.h>
#include <dt/nn.h>
#include <dt/status.h>

/* Make dev the calling thread's current GPU (no-op on cpu). */
dt_status_t dt_device_make_current(dt_device_t *dev);
/* A second stream beside dev->stream (NULL on cpu). */
dt_status_t dt_device_stream_new(dt_device_t *dev, void **out);
void dt_device_stream_free(dt_device_t *dev, void *stream);
/* An event (NULL on cpu). */
dt_status_t dt_device_event_new(dt_device_t *dev, void **out);
void dt_device_event_free(dt_device_t *dev, void *event);
/* Record event after the work queued so far on stream (NULL:
 * dev->stream). */
dt_status_t dt_device_event_record(dt_device_t *dev, void *event,
                                   void *stream);
/* Work queued on stream (NULL: dev->stream) from now on waits for event. */
dt_status_t dt_device_stream_wait(dt_device_t *dev, void *stream,
                                  void *event);
/* The calling thread waits until event has happened. */
dt_status_t dt_device_event_sync(dt_device_t *dev, void *event);
/* Queued copy on stream (NULL: dev->stream); host memory must be pinned
 * (dt_device_host_alloc) and untouched until an event recorded after it
 * has happened. On cpu: memmove, done on return. */
dt_status_t dt_device_copy_async(dt_device_t *dev, void *dst,
                                 const void *src, size_t bytes,
                                 void *stream);
/* x[i] *= f, n floats of the device's memory, queued on stream. */
dt_status_t dt_device_scale(dt_device_t *dev, float *x, float f, size_t n,
                            void *stream);

#endif /* DT_NN_DEVICE_STEP_H */

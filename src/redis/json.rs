//! JSON payloads (feature `serde`): schedule any `Serialize` value, read a
//! delivery back as any `Deserialize` one.

use alloc::string::ToString;
use core::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{AsyncQueue, Delivery, Queue, QueueError, Scheduled};

impl Queue {
    /// [`schedule_in`](Queue::schedule_in) with `value` stored as JSON.
    ///
    /// # Errors
    ///
    /// [`QueueError::Json`] if `value` cannot be serialized; otherwise as
    /// [`schedule_in`](Queue::schedule_in).
    ///
    /// ```no_run
    /// #[derive(serde::Serialize, serde::Deserialize)]
    /// struct Close { order: u64, reason: String }
    ///
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// let close = Close { order: 17, reason: "unpaid".into() };
    /// q.schedule_json("order-17", std::time::Duration::from_secs(900), &close)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn schedule_json<T: Serialize + ?Sized>(
        &self,
        id: &str,
        delay: Duration,
        value: &T,
    ) -> Result<Scheduled, QueueError> {
        let payload = serde_json::to_vec(value).map_err(|e| QueueError::Json(e.to_string()))?;
        self.schedule_in(id, delay, &payload)
    }
}

impl AsyncQueue {
    /// [`Queue::schedule_json`], as a future.
    ///
    /// # Errors
    ///
    /// As [`Queue::schedule_json`].
    ///
    /// ```no_run
    /// # async fn f(q: tickwheel::redis::AsyncQueue) -> Result<(), tickwheel::redis::QueueError> {
    /// q.schedule_json("order-17", std::time::Duration::from_secs(900), &("close", 17)).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn schedule_json<T: Serialize + ?Sized>(
        &self,
        id: &str,
        delay: Duration,
        value: &T,
    ) -> Result<Scheduled, QueueError> {
        let payload = serde_json::to_vec(value).map_err(|e| QueueError::Json(e.to_string()))?;
        self.schedule_in(id, delay, &payload).await
    }
}

impl Delivery {
    /// The payload, read as JSON into a `T`.
    ///
    /// # Errors
    ///
    /// [`QueueError::Json`] if the payload is not JSON for a `T`.
    ///
    /// ```no_run
    /// #[derive(serde::Serialize, serde::Deserialize)]
    /// struct Close { order: u64 }
    ///
    /// # let q = tickwheel::redis::Queue::connect("redis://127.0.0.1:6380", "orders")?;
    /// # let consumer = q.consumer()?;
    /// for job in consumer.fetch(10, std::time::Duration::from_secs(1))? {
    ///     let close: Close = job.json()?;
    ///     println!("closing order {}", close.order);
    ///     consumer.ack(&job)?;
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, QueueError> {
        serde_json::from_slice(&self.payload).map_err(|e| QueueError::Json(e.to_string()))
    }
}

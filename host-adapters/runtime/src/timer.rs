//! What configures and reports on a [`TimerService`](crate::TimerService):
//! its options, the handle of its spawned loop, the report of one poll and
//! the error callback.
//!
//! You need it to build a timer service with anything but the defaults
//! ([`TimerServiceOptions`]), to stop its loop ([`TimerServiceHandle`]),
//! or to read what a [`poll_once`](crate::TimerService::poll_once) did
//! ([`PollReport`]).

pub use crate::timer_service::{PollReport, TimerServiceHandle};
pub use crate::timer_service_options::{OnTimerError, TimerServiceOptions};

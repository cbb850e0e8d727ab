//! A recording of browser steps: one tab of a render session of its own (so its own browser
//! context, and all its traffic through its own egress proxy under the network policy and the
//! size limits of any render), kept open between the actions of a person who records steps in
//! a frontend. Each action takes its turn as a render does (the frontend's [`crate::TabGate`],
//! then one of the renderer's tabs) only while it runs, so an open recording holds no slot a
//! check could use; between actions the tab only waits. It is seen through screenshots, and
//! acted on by the same step code a check runs ([`super::steps`]), so a step that worked while
//! recording is the step a check runs.

use super::browser::Live;
use super::steps::{Pace, StepRun};
use super::tab::{COMMAND_TIMEOUT, Tab, TabError};
use super::{RenderSession, RendererInner, SessionOptions};
use crate::fetch::{FetchError, FetchRequest};
use crate::model::Step;
use crate::steps::{self, Steps};
use base64::Engine as _;
use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, CaptureScreenshotParams, Viewport,
};
use std::sync::Arc;
use std::time::Instant;

/// The tallest part of a page a screenshot shows (CSS pixels from its top).
pub const MAX_SHOT_HEIGHT: u32 = 3000;

/// A screenshot of a recording's page.
#[derive(Debug, Clone)]
pub struct Screenshot {
    /// The picture, a JPEG.
    pub jpeg: Vec<u8>,
    /// Its width in CSS pixels of the page (one pixel of the picture each).
    pub width: u32,
    /// Its height, likewise.
    pub height: u32,
}

/// A page open for recording steps; see the module docs. Close it with [`Recording::close`];
/// dropping it also releases its browser context, in the background.
pub struct Recording {
    session: RenderSession,
    renderer: Arc<RendererInner>,
    request: FetchRequest,
    tab: tokio::sync::Mutex<Option<(Tab, Arc<Live>)>>,
}

impl std::fmt::Debug for Recording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recording")
            .field("url", &self.request.url.as_str())
            .finish_non_exhaustive()
    }
}

/// What holds a recording's turn while one action runs.
struct Turn {
    _pass: Option<crate::TabPass>,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl Recording {
    pub(super) async fn open(
        renderer: Arc<RendererInner>,
        session: RenderSession,
        request: FetchRequest,
    ) -> Result<Recording, FetchError> {
        let recording = Recording {
            session,
            renderer,
            request,
            tab: tokio::sync::Mutex::new(None),
        };
        recording.load().await?;
        Ok(recording)
    }

    fn options(&self) -> &SessionOptions {
        self.session.options()
    }

    /// The frontend's turn, then a tab of the renderer, as a render takes them.
    async fn turn(&self) -> Result<Turn, FetchError> {
        let pass = match &self.options().tabs {
            Some(gate) => Some(gate.enter().await?),
            None => None,
        };
        let permit = self.renderer.acquire_tab().await?;
        Ok(Turn {
            _pass: pass,
            _permit: permit,
        })
    }

    /// The recording's tab, opened on first use (and again after it was lost).
    async fn tab<'a>(
        &self,
        slot: &'a mut Option<(Tab, Arc<Live>)>,
    ) -> Result<&'a mut Tab, FetchError> {
        if slot.as_ref().is_none_or(|(_, live)| !live.is_alive()) {
            *slot = None;
            let opened = self.session.take_tab().await.map_err(failure)?;
            *slot = Some(opened);
        }
        match slot.as_mut() {
            Some((tab, _)) => Ok(tab),
            None => Err(FetchError::Render("the browser tab was lost".into())),
        }
    }

    /// Loads the page afresh, as a check's render starts, and waits for it to settle.
    pub async fn load(&self) -> Result<(), FetchError> {
        let _turn = self.turn().await?;
        let mut slot = self.tab.lock().await;
        let settings = &self.renderer.settings;
        let result = async {
            let tab = self.tab(&mut slot).await?;
            let mut waits = super::pending::Waits::default();
            tab.navigate(&self.request, settings)
                .await
                .map_err(failure)?;
            tab.settle(settings, &self.renderer.long_polls, &mut waits)
                .await
                .map_err(failure)
        }
        .await;
        self.forget_broken(&mut slot, &result);
        match result {
            Ok(()) => Ok(()),
            // A failed navigation refused by the egress says so, as a check's does.
            Err(error) => Err(self.session.last_refusal().await.unwrap_or(error)),
        }
    }

    /// Runs `list` from the page as it is, as a check runs its steps; a failure is said as a
    /// check says it ("step 2 of 3 (click `#go`): no element matched within 10 s"), its
    /// secret values masked.
    pub async fn run(&self, list: &[Step]) -> Result<(), String> {
        let _turn = self.turn().await.map_err(|e| e.to_string())?;
        let mut slot = self.tab.lock().await;
        let plan = Arc::new(Steps {
            steps: list.to_vec(),
            login: Vec::new(),
            logged_in_when: None,
        });
        let run = StepRun::new(plan.clone(), None, self.renderer.policy.clone());
        let settings = &self.renderer.settings;
        let result = async {
            let tab = self.tab(&mut slot).await.map_err(|e| e.to_string())?;
            let pace = Pace {
                run: &run,
                settings,
                long_polls: &self.renderer.long_polls,
                budget: Instant::now() + steps::STEPS_BUDGET,
            };
            let mut waits = super::pending::Waits::default();
            match tab.run_list("step", list, &pace, &mut waits).await {
                Ok(()) => Ok(()),
                Err(TabError::Step(failure)) => Err(failure.message(&plan, None)),
                Err(other) => Err(plan.scrub(&failure(other).to_string())),
            }
        }
        .await;
        if result.is_err() && slot.as_ref().is_some_and(|(_, live)| !live.is_alive()) {
            *slot = None;
        }
        result
    }

    /// Loads the page afresh in a new browser context (no cookie or storage of the recording
    /// so far, as a check starts) and runs `list` on it: what a check would do.
    pub async fn replay(&self, list: &[Step]) -> Result<(), String> {
        let tab = self.tab.lock().await.take();
        if let Some((tab, _)) = tab {
            tab.close().await;
        }
        self.session.reset().await;
        self.load().await.map_err(|e| e.to_string())?;
        self.run(list).await
    }

    /// Evaluates `expression` in the page (awaiting a promise), within a short time.
    pub async fn evaluate(&self, expression: &str) -> Result<serde_json::Value, FetchError> {
        let _turn = self.turn().await?;
        let mut slot = self.tab.lock().await;
        let tab = self.tab(&mut slot).await?;
        tab.eval_within(expression, COMMAND_TIMEOUT)
            .await
            .map_err(failure)
    }

    /// A JPEG of the page from its top, as wide as the browser's window and at most
    /// [`MAX_SHOT_HEIGHT`] tall (images, fonts and media are never loaded by a render, so
    /// they are missing from it).
    pub async fn screenshot(&self) -> Result<Screenshot, FetchError> {
        let _turn = self.turn().await?;
        let mut slot = self.tab.lock().await;
        let tab = self.tab(&mut slot).await?;
        let size = tab
            .eval_within(
                "window.scrollTo(0, 0), [document.documentElement.clientWidth || innerWidth, \
                 Math.max(document.documentElement.scrollHeight, innerHeight)]",
                COMMAND_TIMEOUT,
            )
            .await
            .map_err(failure)?;
        let number = |i: usize| size.get(i).and_then(serde_json::Value::as_f64);
        let width = number(0).unwrap_or(800.0).clamp(1.0, 4000.0);
        let height = number(1)
            .unwrap_or(600.0)
            .clamp(1.0, f64::from(MAX_SHOT_HEIGHT));
        let clip = Viewport {
            x: 0.0,
            y: 0.0,
            width,
            height,
            scale: 1.0,
        };
        let params = CaptureScreenshotParams::builder()
            .format(CaptureScreenshotFormat::Jpeg)
            .quality(70)
            .clip(clip)
            .capture_beyond_viewport(true)
            .build();
        let shot = tab
            .command("taking a screenshot", params)
            .await
            .map_err(failure)?;
        let data: &str = shot.data.as_ref();
        let jpeg = base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| FetchError::Render(format!("the screenshot could not be read: {e}")))?;
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // clamped above
        Ok(Screenshot {
            jpeg,
            width: width.round() as u32,
            height: height.round() as u32,
        })
    }

    /// The page's address and title now.
    pub async fn whereabouts(&self) -> Result<(String, String), FetchError> {
        let answer = self.evaluate("[location.href, document.title]").await?;
        let text = |i: usize| {
            answer
                .get(i)
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_string()
        };
        Ok((text(0), text(1)))
    }

    /// Closes the tab and releases the recording's browser context.
    pub async fn close(self) {
        let tab = self.tab.lock().await.take();
        if let Some((tab, _)) = tab {
            tab.close().await;
        }
        self.session.close().await;
    }

    fn forget_broken<T>(
        &self,
        slot: &mut Option<(Tab, Arc<Live>)>,
        result: &Result<T, FetchError>,
    ) {
        if result.is_err() && slot.as_ref().is_some_and(|(_, live)| !live.is_alive()) {
            *slot = None;
        }
    }
}

/// A tab's failure as an error of the recording.
fn failure(error: TabError) -> FetchError {
    match error {
        TabError::Crashed => FetchError::Render("the page crashed the browser tab".into()),
        TabError::BrowserGone(reason) => {
            FetchError::Render(format!("the browser failed: {reason}"))
        }
        TabError::Page { error, .. } => error,
        TabError::Step(failure) => {
            FetchError::Render(format!("{}: {}", failure.head, failure.reason))
        }
    }
}

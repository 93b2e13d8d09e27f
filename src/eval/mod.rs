//! `polysandbox eval`: every instance of a benchmark in a sandbox of its own, graded, measured,
//! and reported. Steps: load the catalogue, the dataset and the predictions; select (language,
//! ids, shard, sample); skip what `--resume` may skip; make sure each image is there and its
//! toolchain answers (once per image); run the instances, at most `--jobs` at once and no more
//! than the host's memory holds; append each result as it comes; write the reports.

pub mod attempt;
pub mod calibration;
pub mod catalogue;
pub mod channel;
pub mod child;
pub mod control;
pub mod dataset;
pub mod driver;
pub mod formats;
pub mod instance;
pub mod kit;
pub mod merge;
pub mod names;
pub mod options;
pub mod parsers;
pub mod patch;
pub mod predictions;
pub mod prepare;
pub mod progress;
pub mod project;
pub mod records;
pub mod report;
pub mod report_html;
pub mod result;
pub mod rewrite;
pub mod scheduler;
pub mod settings;
pub mod tamper;
pub mod verdict;
pub mod vs_gold;

pub use options::{ControlMode, Options, ReportFormat};
pub use progress::{Progress, Quiet};
pub use result::{clean, Grade, InstanceResult, Verdict};
pub use rewrite::rewrite;
pub use scheduler::{check_input, run};

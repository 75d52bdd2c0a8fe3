//! The configurations of an experiment: the product of `--sweep AXIS=V,...`
//! axes over the test bench's flags describe, or the configurations
//! `--config "AXIS=V AXIS=V"` lists whole (each of them with every
//! combination of the `--sweep` axes, when both are given). An axis varies one of the
//! test's options (`t` tests, `m`/`M` send and receive sizes, `r`
//! request/response sizes, `s`/`S` socket buffers, where `default`
//! leaves the size to the kernel, `b` first burst) or a setting of the
//! system under test (`mtu`, `txqueuelen`, an offload such
//! as `gso`, a dotted sysctl name; see [`run_record::spec::Setting`]).
//! Every configuration is built and checked here, before anything runs.

use crate::exit::InputError;
use run_record::spec::{RunSpec, Setting, SystemSettings, TestKind, parse_size};

/// Most configurations one experiment may have.
pub const MAX_CONFIGURATIONS: usize = 256;

/// What an axis varies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AxisKey {
    /// `t`: the test.
    Test,
    /// `m`: bytes per send.
    SendSize,
    /// `M`: bytes per receive.
    RecvSize,
    /// `r`: request and response sizes.
    RequestResponse,
    /// `s`: the local socket buffer.
    LocalBuffer,
    /// `S`: the remote socket buffer.
    RemoteBuffer,
    /// `b`: the first burst.
    Burst,
    /// A setting of the system under test, by its key.
    Setting(String),
}

impl AxisKey {
    fn of(key: &str) -> Option<AxisKey> {
        Some(match key {
            "t" => AxisKey::Test,
            "m" => AxisKey::SendSize,
            "M" => AxisKey::RecvSize,
            "r" => AxisKey::RequestResponse,
            "s" => AxisKey::LocalBuffer,
            "S" => AxisKey::RemoteBuffer,
            "b" => AxisKey::Burst,
            _ => return None,
        })
    }

    /// The key as written before `=`.
    pub fn name(&self) -> &str {
        match self {
            AxisKey::Test => "t",
            AxisKey::SendSize => "m",
            AxisKey::RecvSize => "M",
            AxisKey::RequestResponse => "r",
            AxisKey::LocalBuffer => "s",
            AxisKey::RemoteBuffer => "S",
            AxisKey::Burst => "b",
            AxisKey::Setting(key) => key,
        }
    }
}

/// One value of an axis, checked.
#[derive(Clone, Debug, PartialEq)]
pub enum AxisValue {
    /// A test.
    Test(TestKind),
    /// A size or count.
    Number(u32),
    /// Request and response sizes.
    Pair(u32, u32),
    /// `default` of a socket buffer: no size asked, the kernel's own (and
    /// its autotuning), as without `-s`/`-S`.
    KernelDefault,
    /// A setting.
    Setting(Setting),
}

/// An axis: what varies and its values, in the order given.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// What varies.
    pub key: AxisKey,
    /// Its values, as read.
    pub values: Vec<AxisValue>,
    /// Its values as written, for the names of configurations.
    pub texts: Vec<String>,
}

/// Reads `KEY=V1,V2,...`.
pub fn parse_axis(text: &str) -> Result<Axis, InputError> {
    let bad = |why: String| InputError(format!("invalid --sweep '{text}': {why}"));
    let (key, values) = text
        .split_once('=')
        .ok_or_else(|| bad("expected AXIS=VALUE,VALUE,...".to_string()))?;
    let key = key.trim();
    let texts: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
    if texts.iter().any(String::is_empty) {
        return Err(bad("an empty value".to_string()));
    }
    if texts.len() > run_record::spec::MAX_SWEEP_POINTS {
        return Err(bad(format!(
            "at most {} values per axis",
            run_record::spec::MAX_SWEEP_POINTS
        )));
    }
    let axis_key = match AxisKey::of(key) {
        Some(axis_key) => axis_key,
        None => {
            // A setting: checked value by value.
            Setting::of_key(key, &texts[0]).map_err(&bad)?;
            AxisKey::Setting(key.to_string())
        }
    };
    let option = format!("--sweep {key}=");
    let mut values = Vec::new();
    for value in &texts {
        let read = match &axis_key {
            AxisKey::Test => AxisValue::Test(value.parse().map_err(|err| bad(format!("{err}")))?),
            AxisKey::RequestResponse => {
                let (request, response) = value.split_once('/').unwrap_or((value, value));
                let size =
                    |part: &str| parse_size(&option, part).map_err(|err| bad(err.to_string()));
                AxisValue::Pair(size(request)?, size(response)?)
            }
            AxisKey::Burst => AxisValue::Number(
                value
                    .parse()
                    .map_err(|_| bad(format!("'{value}' is not a count")))?,
            ),
            AxisKey::LocalBuffer | AxisKey::RemoteBuffer if value == "default" => {
                AxisValue::KernelDefault
            }
            AxisKey::SendSize
            | AxisKey::RecvSize
            | AxisKey::LocalBuffer
            | AxisKey::RemoteBuffer => {
                AxisValue::Number(parse_size(&option, value).map_err(|err| bad(err.to_string()))?)
            }
            AxisKey::Setting(key) => AxisValue::Setting(Setting::of_key(key, value).map_err(&bad)?),
        };
        if values.contains(&read) {
            return Err(bad(format!("{value} is given twice")));
        }
        values.push(read);
    }
    Ok(Axis {
        key: axis_key,
        values,
        texts,
    })
}

/// One value on one axis, as a configuration takes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// What varies.
    pub key: AxisKey,
    /// Its value, read.
    pub value: AxisValue,
    /// The value as written.
    pub text: String,
}

/// What each configuration takes one alternative of: a value of one
/// `--sweep` axis, or one of the configurations `--config` lists (a
/// point on each of its axes).
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// The axes of each alternative, in order.
    keys: Vec<AxisKey>,
    /// The alternatives, in the order given.
    alternatives: Vec<Vec<Point>>,
}

impl Group {
    /// The axes the group varies.
    pub fn keys(&self) -> impl Iterator<Item = &AxisKey> {
        self.keys.iter()
    }

    fn of_axis(axis: Axis) -> Group {
        let alternatives = axis
            .values
            .into_iter()
            .zip(axis.texts)
            .map(|(value, text)| {
                vec![Point {
                    key: axis.key.clone(),
                    value,
                    text,
                }]
            })
            .collect();
        Group {
            keys: vec![axis.key],
            alternatives,
        }
    }
}

/// Reads one `--config "AXIS=VALUE AXIS=VALUE ..."`: a value on each of
/// its axes, no axis twice.
pub fn parse_config(text: &str) -> Result<Vec<Point>, InputError> {
    let bad = |why: String| InputError(format!("invalid --config '{text}': {why}"));
    let mut points: Vec<Point> = Vec::new();
    for word in text.split_whitespace() {
        if word.contains(',') {
            return Err(bad(format!(
                "{word} lists values: a configuration takes one value per axis \
                 (list them with --sweep; r=REQ/RESP sets both sizes)"
            )));
        }
        let axis = parse_axis(word).map_err(|err| {
            let prefix = format!("invalid --sweep '{word}': ");
            bad(format!(
                "{word}: {}",
                err.0.strip_prefix(&prefix).unwrap_or(&err.0)
            ))
        })?;
        if points.iter().any(|point| point.key == axis.key) {
            return Err(bad(format!("{}= is given twice", axis.key.name())));
        }
        points.extend(Group::of_axis(axis).alternatives.remove(0));
    }
    if points.is_empty() {
        return Err(bad("expected AXIS=VALUE AXIS=VALUE ...".to_string()));
    }
    Ok(points)
}

/// Reads every `--config` (first, as one group) and every `--sweep`,
/// refusing an axis given twice, configurations on different axes and
/// more configurations in all than [`MAX_CONFIGURATIONS`].
pub fn parse_axes(sweeps: &[String], configs: &[String]) -> Result<Vec<Group>, InputError> {
    let mut groups: Vec<Group> = Vec::new();
    if !configs.is_empty() {
        let mut alternatives: Vec<Vec<Point>> = Vec::new();
        for text in configs {
            let points = parse_config(text)?;
            if let Some(first) = alternatives.first() {
                let keys = |points: &[Point]| {
                    points
                        .iter()
                        .map(|point| point.key.name().to_string())
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                if keys(first) != keys(&points) {
                    return Err(InputError(format!(
                        "--config '{text}' sets {}, another sets {}: every configuration \
                         names the same axes, in the same order",
                        keys(&points),
                        keys(first)
                    )));
                }
            }
            if alternatives.contains(&points) {
                return Err(InputError(format!("--config '{text}' is given twice")));
            }
            alternatives.push(points);
        }
        let keys = alternatives[0]
            .iter()
            .map(|point| point.key.clone())
            .collect();
        groups.push(Group { keys, alternatives });
    }
    for text in sweeps {
        let axis = parse_axis(text)?;
        if groups
            .iter()
            .flat_map(Group::keys)
            .any(|key| *key == axis.key)
        {
            return Err(InputError(format!(
                "--sweep {}= is given twice, or also in --config: list its values in one",
                axis.key.name()
            )));
        }
        groups.push(Group::of_axis(axis));
    }
    let n_configurations = groups.iter().try_fold(1usize, |product, group| {
        product.checked_mul(group.alternatives.len())
    });
    match n_configurations {
        Some(n) if n <= MAX_CONFIGURATIONS => Ok(groups),
        _ => Err(InputError(format!(
            "the sweeps make {} configurations; an experiment has at most {MAX_CONFIGURATIONS}",
            n_configurations.map_or_else(|| "too many".to_string(), |n| n.to_string())
        ))),
    }
}

/// One configuration: its spec, and its values on each axis (as
/// written, `m=9000`), for names and progress.
#[derive(Clone, Debug, PartialEq)]
pub struct Configuration {
    /// The resolved spec.
    pub spec: RunSpec,
    /// `KEY=VALUE` of each axis.
    pub name: Vec<String>,
}

/// The configurations of `groups` over the spec `spec_of` gives for a
/// test, the last group varying fastest; each checked against the test's
/// limits, an error naming the configuration.
pub fn configurations(
    groups: &[Group],
    default_test: TestKind,
    spec_of: &dyn Fn(TestKind) -> Result<RunSpec, InputError>,
) -> Result<Vec<Configuration>, InputError> {
    let mut configurations = Vec::new();
    let mut indexes = vec![0usize; groups.len()];
    loop {
        let points: Vec<&Point> = groups
            .iter()
            .zip(&indexes)
            .flat_map(|(group, &idx)| &group.alternatives[idx])
            .collect();
        let test = points
            .iter()
            .find_map(|point| match &point.value {
                AxisValue::Test(test) => Some(*test),
                _ => None,
            })
            .unwrap_or(default_test);
        let mut spec = spec_of(test)?;
        let mut name = Vec::new();
        for point in &points {
            name.push(format!("{}={}", point.key.name(), point.text));
            apply(&mut spec, &point.key, &point.value).map_err(|why| {
                InputError(format!(
                    "configuration {} is not a test: {why}",
                    name.join(" ")
                ))
            })?;
        }
        spec.validate()
            .map_err(|err| InputError(format!("configuration {}: {err}", name.join(" "))))?;
        configurations.push(Configuration { spec, name });
        // The next index, the last group fastest.
        let mut group_idx = groups.len();
        loop {
            if group_idx == 0 {
                return Ok(configurations);
            }
            group_idx -= 1;
            indexes[group_idx] += 1;
            if indexes[group_idx] < groups[group_idx].alternatives.len() {
                break;
            }
            indexes[group_idx] = 0;
        }
    }
}

/// Sets `value` of axis `key` in `spec`; `Err` says why the test does not
/// take it.
fn apply(spec: &mut RunSpec, key: &AxisKey, value: &AxisValue) -> Result<(), String> {
    let rr = spec.test.is_request_response();
    match (key, value) {
        (AxisKey::Test, _) => {}
        (AxisKey::SendSize, AxisValue::Number(bytes)) if !rr => spec.send_size_bytes = *bytes,
        (AxisKey::RecvSize, AxisValue::Number(bytes)) if !rr => spec.recv_size_bytes = *bytes,
        (AxisKey::RequestResponse, AxisValue::Pair(request, response)) if rr => {
            spec.request_size_bytes = *request;
            spec.response_size_bytes = *response;
        }
        (AxisKey::LocalBuffer, AxisValue::Number(bytes)) => {
            spec.local_socket_buffer_bytes = Some(*bytes)
        }
        (AxisKey::RemoteBuffer, AxisValue::Number(bytes)) => {
            spec.remote_socket_buffer_bytes = Some(*bytes)
        }
        (AxisKey::LocalBuffer, AxisValue::KernelDefault) => spec.local_socket_buffer_bytes = None,
        (AxisKey::RemoteBuffer, AxisValue::KernelDefault) => spec.remote_socket_buffer_bytes = None,
        (AxisKey::Burst, AxisValue::Number(burst)) => spec.first_burst = *burst,
        (AxisKey::Setting(_), AxisValue::Setting(setting)) => spec
            .system
            .get_or_insert_with(SystemSettings::default)
            .set(setting.clone()),
        (AxisKey::SendSize | AxisKey::RecvSize, _) => {
            return Err(format!(
                "{} takes no -m or -M (it is request/response)",
                spec.test
            ));
        }
        (AxisKey::RequestResponse, _) => {
            return Err(format!("{} takes no -r (it is a stream test)", spec.test));
        }
        _ => return Err("a value of the wrong kind".to_string()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_of(test: TestKind) -> Result<RunSpec, InputError> {
        Ok(RunSpec::defaults(test))
    }

    fn strings(texts: &[&str]) -> Vec<String> {
        texts.iter().map(|text| text.to_string()).collect()
    }

    fn axes(texts: &[&str]) -> Result<Vec<Group>, InputError> {
        parse_axes(&strings(texts), &[])
    }

    #[test]
    fn axes_make_their_product_last_axis_fastest() {
        let axes = axes(&["m=1K,64K", "S=212992,425984", "gso=on,off"]).unwrap();
        let all = configurations(&axes, TestKind::TcpStream, &spec_of).unwrap();
        assert_eq!(all.len(), 8);
        assert_eq!(all[0].name, ["m=1K", "S=212992", "gso=on"]);
        assert_eq!(all[1].name, ["m=1K", "S=212992", "gso=off"]);
        assert_eq!(all[7].spec.send_size_bytes, 65_536);
        assert_eq!(all[7].spec.remote_socket_buffer_bytes, Some(425_984));
        assert_eq!(
            all[7].spec.system.as_ref().unwrap().features.get("gso"),
            Some(&false)
        );
    }

    #[test]
    fn default_leaves_a_socket_buffer_to_the_kernel() {
        let buffers = axes(&["S=default,212992", "s=128K,default"]).unwrap();
        let all = configurations(&buffers, TestKind::TcpStream, &spec_of).unwrap();
        assert_eq!(all.len(), 4);
        assert_eq!(all[0].name, ["S=default", "s=128K"]);
        assert_eq!(all[0].spec.remote_socket_buffer_bytes, None);
        assert_eq!(all[0].spec.local_socket_buffer_bytes, Some(131_072));
        assert_eq!(all[1].spec.local_socket_buffer_bytes, None);
        assert_eq!(all[3].spec.remote_socket_buffer_bytes, Some(212_992));
        // A default configuration is the spec without -s or -S.
        assert_eq!(all[1].spec, RunSpec::defaults(TestKind::TcpStream));
        for (texts, says) in [
            (&["m=default"][..], "--sweep m="),
            (&["S=default,default"][..], "given twice"),
        ] {
            let err = axes(texts).unwrap_err().to_string();
            assert!(err.contains(says), "{texts:?}: {err}");
        }
    }

    #[test]
    fn configurations_listed_whole_take_the_sweeps_each() {
        let configs = strings(&["S=default s=default", "S=87380 s=87380", "S=2280 s=default"]);
        let groups = parse_axes(&strings(&["m=1K,16K"]), &configs).unwrap();
        let all = configurations(&groups, TestKind::TcpStream, &spec_of).unwrap();
        // 3 configurations x 2 sizes, not 3 x 3 x 2.
        assert_eq!(all.len(), 6);
        assert_eq!(all[0].name, ["S=default", "s=default", "m=1K"]);
        assert_eq!(all[1].name, ["S=default", "s=default", "m=16K"]);
        assert_eq!(all[2].spec.remote_socket_buffer_bytes, Some(87_380));
        assert_eq!(all[2].spec.local_socket_buffer_bytes, Some(87_380));
        assert_eq!(all[5].name, ["S=2280", "s=default", "m=16K"]);
        assert_eq!(all[5].spec.local_socket_buffer_bytes, None);
        for (sweeps, configs, says) in [
            (&[][..], &["S=1K,2K"][..], "lists values"),
            (&[][..], &["S=1K S=2K"][..], "S= is given twice"),
            (&[][..], &["S=1K", "s=1K"][..], "names the same axes"),
            (
                &[][..],
                &["S=1K s=1K", "s=1K S=1K"][..],
                "in the same order",
            ),
            (&[][..], &["S=1K", "S=1K"][..], "is given twice"),
            (&["S=1K,2K"][..], &["S=4K"][..], "also in --config"),
            (&[][..], &["  "][..], "expected AXIS=VALUE"),
            (&[][..], &["gso=maybe"][..], "'gso=maybe': gso=maybe: "),
        ] {
            let err = parse_axes(&strings(sweeps), &strings(configs))
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{sweeps:?} {configs:?}: {err}");
        }
        // Request and response sizes as a sweep writes them apart.
        let rr = parse_axes(&[], &strings(&["r=1/1", "r=64/64"])).unwrap();
        let all = configurations(&rr, TestKind::TcpRr, &spec_of).unwrap();
        assert_eq!(all[1].spec.request_size_bytes, 64);
    }

    #[test]
    fn a_test_axis_takes_each_tests_defaults() {
        let axes = axes(&["t=TCP_STREAM,UDP_STREAM", "s=128K"]).unwrap();
        let all = configurations(&axes, TestKind::TcpStream, &spec_of).unwrap();
        assert_eq!(all[0].spec.send_size_bytes, 16_384);
        assert_eq!(all[1].spec.test, TestKind::UdpStream);
        assert_eq!(all[1].spec.send_size_bytes, 1472);
    }

    #[test]
    fn bad_axes_are_refused_before_anything_runs() {
        for (texts, says) in [
            (&["m"][..], "expected AXIS=VALUE"),
            (&["m=1,,2"][..], "an empty value"),
            (&["m=1,1"][..], "given twice"),
            (&["m=1", "m=2"][..], "is given twice"),
            (&["colour=red"][..], "unknown setting colour"),
            (&["gso=maybe"][..], "give on or off"),
            (&["t=TCP_FOO"][..], "TCP_FOO"),
            (
                &[
                    "txqueuelen=1,2,3,4,5,6,7,8,9",
                    "m=1,2,3,4,5,6,7,8,9",
                    "S=1,2,3,4",
                ][..],
                "at most 256",
            ),
        ] {
            let err = axes(texts).unwrap_err().to_string();
            assert!(err.contains(says), "{texts:?}: {err}");
        }
        let rr = axes(&["m=1K"]).unwrap();
        let err = configurations(&rr, TestKind::TcpRr, &spec_of).unwrap_err();
        assert!(err.to_string().contains("TCP_RR takes no -m"), "{err}");
        let huge = axes(&["m=100M"]).unwrap();
        let err = configurations(&huge, TestKind::TcpStream, &spec_of).unwrap_err();
        assert!(
            err.to_string().starts_with("configuration m=100M:"),
            "{err}"
        );
    }
}

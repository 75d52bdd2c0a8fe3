//! Samples of `archive-list`: an archive of runs imported from peers'
//! tools (iperf3, netperf) under one long label, and an empty list.

use super::Sample;
use crate::views::archive_list::ArchiveListContext;
use archive::store::StoredRun;
use run_record::spec::TestKind;

/// A run imported from `tool` into the lab testbed, of the long label
/// at commit 0123456789ab, with its id and config_key.
fn imported(
    ids: [&str; 2],
    tool: &str,
    test: TestKind,
    started_at: &str,
    throughput_bps: f64,
    transaction_rate: Option<f64>,
) -> StoredRun {
    StoredRun {
        id: ids[0].into(),
        commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
        describe: None,
        label: Some("base-kernel-with-a-long-label".into()),
        config_key: ids[1].into(),
        testbed: "lab".into(),
        test,
        source_tool: tool.into(),
        started_at: started_at.into(),
        n_iterations: 1,
        throughput_bps,
        transaction_rate,
        stored_by: Some("lab".into()),
        stored_from: Some("lab-host".into()),
    }
}

pub fn samples() -> Vec<Sample> {
    let runs = vec![
        imported(
            [
                "5272b3ae28c63f06ca42061b27cff11356d90cd2b41d575cdc259a2cedba658a",
                "f750a5d489b2336dd85eeeaf9037674a93b8b02a0f729e8d6794c369709bcc8a",
            ],
            "iperf3",
            TestKind::TcpStream,
            "2026-11-30T06:27:21.000000Z",
            15594189005.663734,
            None,
        ),
        imported(
            [
                "1c3b3f036b170c557d7abb38d78795d00899fc6d5e31bf0265d039f6c221c8a3",
                "1467c652df87afa80ead2cedb16e3fed0343d85f8c4c6627df976feed240d2c9",
            ],
            "iperf3",
            TestKind::UdpStream,
            "2026-11-30T06:27:45.000000Z",
            31148330038.959686,
            None,
        ),
        imported(
            [
                "f65b42a3d620bc67532bc24a2c218e26a9c5ee8d3281167836dc8211fc9f5742",
                "331c181ffd2d489ec1a6b26277ed17eac83266bf30a5b9fd8fb744940e03209a",
            ],
            "netperf",
            TestKind::TcpStream,
            "2026-11-30T07:33:06.025341Z",
            324840000.0,
            None,
        ),
        imported(
            [
                "0b51b1ac947b24716f378ffd02a3aee9311e2b92973c70503f759901bd9e2505",
                "4ccfb8502b9417038ad348df823da735781d8ced1da4e000b9579d9c95f6124e",
            ],
            "netperf",
            TestKind::TcpStream,
            "2026-11-30T07:33:06.095341Z",
            11614560000.0,
            None,
        ),
        imported(
            [
                "184ebbd633997157e5bbc97fd4e2f5a83c4f85bbb094e29305b8f6c684325d6d",
                "f19df683ea88094f8b801472f61ab9eaf0c80781ec09e8daef1ace4ab3d5837d",
            ],
            "netperf",
            TestKind::TcpRr,
            "2026-11-30T07:33:06.105341Z",
            130661.76,
            Some(8166.36),
        ),
        imported(
            [
                "1b27e566640b38db115f1ab933647ec3bbdb9f021cb92974bdfa4198294f5672",
                "09f7a9e1ba24bae8562b201003e65bedf74e216777fec255811e441c9d84fc39",
            ],
            "netperf",
            TestKind::TcpRr,
            "2026-11-30T07:33:06.105341Z",
            126391.68,
            Some(7899.48),
        ),
        imported(
            [
                "308487d714dbecb53e10d5c37ef4ad9e862c9564bcc74b8d39ea2505fe0ce07e",
                "8db4bf8d2b0117d1d7ae276756e6731c0ac959ec92464a3cba6823eed7338660",
            ],
            "netperf",
            TestKind::TcpStream,
            "2026-11-30T07:33:06.105341Z",
            11967530000.0,
            None,
        ),
        imported(
            [
                "62832dfdf8f9c1764aa1e5c58863f2941709dff8b325c2f81b2ab69e9354b26e",
                "8eb2ac593d6b15c88c7f3ded2d617d0275ffdb31d0c673aed18a22a5100d77e1",
            ],
            "netperf",
            TestKind::TcpRr,
            "2026-11-30T07:33:06.105341Z",
            9169684.48,
            Some(8954.77),
        ),
        imported(
            [
                "64ca78745ccba7aadd5cd19ad85ad7aa6584e87056f654e5fb2e081840131a9f",
                "cc27c2809c6ee035a7ebe885337318e6d00ba65fcc8ecc97ee083723b0fa8bc6",
            ],
            "netperf",
            TestKind::TcpRr,
            "2026-11-30T07:33:06.105341Z",
            133389.44,
            Some(8336.84),
        ),
        imported(
            [
                "700871ef9dcb463058b0e60f7141141d7f3184175d352e935ef21e742d53667f",
                "7ff97dbe404ca1df0a2217f9157ccceb68bba72c920d66de888973088776521d",
            ],
            "netperf",
            TestKind::TcpStream,
            "2026-11-30T07:33:06.105341Z",
            8442340000.0,
            None,
        ),
        imported(
            [
                "70a7113816ad474c884da47af0f5670500bd13bdf60b8a9317ef296d979ada85",
                "d136f9cebf5e465f08d345af24fa52024a9d9bac83b407b3a92ed2c0dc451bb9",
            ],
            "netperf",
            TestKind::UdpStream,
            "2026-11-30T07:33:06.105341Z",
            1875600000.0,
            None,
        ),
        imported(
            [
                "a8543ae456bbc83086528a44540c64da5b1f170efbfbf0aadfc200789e29bd56",
                "96e3ad99b07de5105a89db29db7b9a0850d4e8bf12a5a00449c42fe2a7217add",
            ],
            "netperf",
            TestKind::TcpStream,
            "2026-11-30T07:33:06.105341Z",
            11831790000.0,
            None,
        ),
        imported(
            [
                "ba21f15852ad219ad678065fc612a50fdff774898c2ae25cfa60c20ec9e455a2",
                "f19df683ea88094f8b801472f61ab9eaf0c80781ec09e8daef1ace4ab3d5837d",
            ],
            "netperf",
            TestKind::TcpRr,
            "2026-11-30T07:33:06.105341Z",
            136308.48,
            Some(8519.28),
        ),
        imported(
            [
                "df152365cb241da51c8f94f9ffb595a65b630278d6357c62158104218f176f3c",
                "2bc3489b4ddef9238ec2b65695860f5adb6c71906b8be217ea3b70db5f486162",
            ],
            "netperf",
            TestKind::UdpRr,
            "2026-11-30T07:33:06.105341Z",
            152018.4,
            Some(9501.15),
        ),
    ];
    vec![
        Sample::new(
            "archive-list",
            "peer-imports",
            &ArchiveListContext { runs: &runs },
        ),
        Sample::new("archive-list", "empty", &ArchiveListContext { runs: &[] }),
    ]
}

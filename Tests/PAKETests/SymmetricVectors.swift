// A verbatim copy of ../shared/vectors/spake2-symmetric.json (kept in the test target so CI needs no
// outside files). `VectorFileTests` checks that the copy still matches when the shared file exists.

let spake2SymmetricVectorsJSON = #"""
    {
     "description": "python-spake2 SPAKE2_Symmetric on Ed25519 (the Magic Wormhole PAKE). msg_out = b'S' || 32-byte Ed25519 point. key = SHA256(SHA256(pw) || SHA256(idSymmetric) || min(Xs,Ys) || max(Xs,Ys) || K). Scalars are shown both as decimal and as 32-byte little-endian; entropy bytes are read big-endian (int.from_bytes(entropy,'big') mod L). password_hex and idSymmetric_hex are the NFC-normalised UTF-8 of the *_text fields (vectors 12 and 13 differ only in Unicode composition of the text). X_hex is x*B before blinding; side2.X_hex is y*B.",
     "generator": {
      "spake2_version": "0.9",
      "python": "3.11.7"
     },
     "constants": {
      "L_dec": "7237005577332262213973186563042994240857116359379907606001950938285454250989",
      "base_hex": "5866666666666666666666666666666666666666666666666666666666666666",
      "M_hex": "15cfd18e385952982b6a8f8c7854963b58e34388c8e6dae891db756481a02312",
      "N_hex": "f04f2e7eb734b2a8f8b472eaf9c3c632576ac64aea650b496a8a20ff00e583c3",
      "S_hex": "6f00dae87c1be1a73b5922ef431cd8f57879569c222d22b1cd71e8546ab8e6f1",
      "arbitrary_element_seed_S": "symmetric",
      "hash_params_symmetric": "e89ea0959b46dfce45b54ac969868853d202ba26b97ff98b0982d617ee2bea3d"
     },
     "vectors": [
      {
       "index": 0,
       "password_text": "7-guitarist-revenge",
       "password_hex": "372d6775697461726973742d726576656e6765",
       "idSymmetric_text": "lothar.com/wormhole/text-or-file-xfer",
       "idSymmetric_hex": "6c6f746861722e636f6d2f776f726d686f6c652f746578742d6f722d66696c652d78666572",
       "pw_scalar_dec": "4092339207026217347257635739329857021154536156955073442804813362418928365192",
       "pw_scalar_le32_hex": "88ae30fd728f30424326649751616902c39ea4ecd2280bb80646f292912e0c09",
       "side1": {
        "entropy_hex": "1e14773e1059579eca4e5ceba2eb68a82c6fd4e67b90239da99ba32d5b726c34788bd55d61f155a1bf6a7372982c65756e43c8b6a1c42981c18b2be5babdd58c",
        "scalar_dec": "5339062767469680087837818129069667104863993062766438342117677596318792867415",
        "scalar_le32_hex": "57de361bfb9002bf6346a373e68736b5da325f897540f5a4be445f8f6ccdcd0b",
        "X_hex": "f1c3a640b88c122235e0b395db523737ea1d0c071d781769d63012d26974c341",
        "msg_out_hex": "539db38acae5a0bdaa0bad5ed0d2b4c2ca84f3352b97c2e0454ecff19289ef5a76"
       },
       "side2": {
        "entropy_hex": "dc3dc5e3b9436dd78932b3dd9cec7cca63f37ce02f0a9a759d4efcccd761b86b6e1c3dbf65143a4a9e1870b347be1c5419c74109be0fef6c1c3da68b6bc0c02b",
        "scalar_dec": "6942090884922686126856238077277241148012675063435411875916008332565061935835",
        "scalar_le32_hex": "dba245ce52045c8260aa67de99a602442e8c8bed02f0e169df4401178e15590f",
        "X_hex": "be3c8f9e35ac29308243697497c5be99b8bc84aad6195e0b3c056e3d499fddf3",
        "msg_out_hex": "53d1c8b284de97cb877663d47214f1f8d6e7445c60e71a93a16071d95d8fa7b153"
       },
       "K_hex": "21d2ace72fb15503ff06b913b84a76be95a0dcdd283d5c5b0047e234ff599f8f",
       "transcript_hex": "31e5010ad4c301859c094b320c2af0a562fede31b4900b3f3c2efb648ea6d7f21675beb2540d615346089a151915a1df12c67577f53ddb4c0ec98858de0781a19db38acae5a0bdaa0bad5ed0d2b4c2ca84f3352b97c2e0454ecff19289ef5a76d1c8b284de97cb877663d47214f1f8d6e7445c60e71a93a16071d95d8fa7b15321d2ace72fb15503ff06b913b84a76be95a0dcdd283d5c5b0047e234ff599f8f",
       "key_hex": "9c4617041661acb24325593b7cde79901bd442d0639c13644efe4838e8e40d58"
      },
      {
       "index": 3,
       "password_text": "coral-piano-42",
       "password_hex": "636f72616c2d7069616e6f2d3432",
       "idSymmetric_text": "eleven.example/invite-v1",
       "idSymmetric_hex": "656c6576656e2e6578616d706c652f696e766974652d7631",
       "pw_scalar_dec": "235006780913823234501158774507690037458207148803820315757954763727717841951",
       "pw_scalar_le32_hex": "1fbca0981a6003907740cdea557bbf0d6862c5830d2d279fd050e1f855028500",
       "side1": {
        "entropy_hex": "f3a8c6b760a596c2d5cdb09f946f7fcb5f6ee613417b749c6e3150e7fda60a2835ac014f6d39e97a005f1fe38b2c163a040cd5be3331f8dd2aa3a77516f416cc",
        "scalar_dec": "2915208591470691607862527473534527127826605965915950308358330838585781101877",
        "scalar_le32_hex": "35a5d1bb86fe17f15bfe3fad8ead41826f4974fc94b5670059b9546118f37106",
        "X_hex": "a7a33952ed13a20a5d7ab79a4d550195a7d84fbb663c43bebcdda4391e0b8d1f",
        "msg_out_hex": "53f74ff8d3c2446c1b0d50add01583e933b9ff273ec53e3bd843f5cddf40e683f5"
       },
       "side2": {
        "entropy_hex": "bc8cacc79f279f0dd8b1f8f2af942abd6b553d775a2c6697af40ba59550a5062d971981ce6845aa04df899e071b2a712b9daea9d77af00b1cfe28e1ec23e13d8",
        "scalar_dec": "2294858255010195914357735626306031514905756463321102818449432397212068182456",
        "scalar_le32_hex": "b879d5f22152bcac8c2fad9bb0ee3fe8269d4b411eeb9780e98c5d8bffd71205",
        "X_hex": "aa688132edb7007b6b212f65d05595527fcd3bb9768996ac01db6e237d58c3ad",
        "msg_out_hex": "53e790ab00bfd5ac5dd7d1cf7ad9343135c433c16788b4d43fa6b5d2934181d341"
       },
       "K_hex": "879ce4227e583c5f0e9add926da0fe127bd611b1bdfc1829853ab00f43489785",
       "transcript_hex": "4ebb83244476ff09235af2747edc6eae5adaa23ec1aa68e405f41a6375137cefebf7915d7fdf15cbe2a08f8e8549a80207401fd705dc8d6144c84988a0d1ee87e790ab00bfd5ac5dd7d1cf7ad9343135c433c16788b4d43fa6b5d2934181d341f74ff8d3c2446c1b0d50add01583e933b9ff273ec53e3bd843f5cddf40e683f5879ce4227e583c5f0e9add926da0fe127bd611b1bdfc1829853ab00f43489785",
       "key_hex": "946e14d06afaae50656dee231180277936a2d715e2d54072229ed9222fee0e15"
      },
      {
       "index": 5,
       "password_text": "9-zulu-yucatan",
       "password_hex": "392d7a756c752d7975636174616e",
       "idSymmetric_text": "eleven.example/invite-v1",
       "idSymmetric_hex": "656c6576656e2e6578616d706c652f696e766974652d7631",
       "pw_scalar_dec": "2437803742208068644870493848002188052988002175420679747392105303818193798220",
       "pw_scalar_le32_hex": "4c04ef19e55b61abc63d5384ae99080f4c79a26a28253b5e89e300597ebf6305",
       "side1": {
        "entropy_hex": "9d7aa2a23b2ae6595e0eb3bf40284a542f1fd107c8785638b567d0f647b238e6f89fa8daa1bc57011e3d458dde1a7f29da85012524e3675e9e97fcb9f572c258",
        "scalar_dec": "1879968240855962397608327386249804744930280751270483165884129779397961129335",
        "scalar_le32_hex": "771d1378684ce9fbc19e728ddd5986f0b77d4e31fbf86d99dcb6ec9e39062804",
        "X_hex": "21c1e30e7401dda8ec8cb754e80f2af850816ea5fd33832aaef40ea8c5505a57",
        "msg_out_hex": "5373fbfe941edb38b822c76a9792459e6ff920d0eaab807fc5822ac32710653313"
       },
       "side2": {
        "entropy_hex": "83ea1adba9862e34afea1e84b19a876a44f537f0cdd951b03faf70bd0efcbe26519be81118cf06c8b10093080566f24fe682f609df8d9b84ccf5664cb5640e75",
        "scalar_dec": "3322902140727027283922678696040935143129509987290798828513470440304384951243",
        "scalar_le32_hex": "cb43c8c94610d28acd60c61158bd28cbdb8f8ee71afa68ff6dc2cd952ab25807",
        "X_hex": "3c68748da05c68c673fa12ba17cd2ce3d77de051a3c47639e087a90347bacdd3",
        "msg_out_hex": "53a875049c12ddb8fbd00c2f35185603d1c14278c5d3043a173ff17d66e9317976"
       },
       "K_hex": "f8fa11b86a35bf7a21d6dd069f5d1060ef38d3773f5ebf153b7d8cfff637f774",
       "transcript_hex": "8cfd29bbecd42348071b9d5bf6cf2b8b539cccd13fcd9bcd87a12511639e917cebf7915d7fdf15cbe2a08f8e8549a80207401fd705dc8d6144c84988a0d1ee8773fbfe941edb38b822c76a9792459e6ff920d0eaab807fc5822ac32710653313a875049c12ddb8fbd00c2f35185603d1c14278c5d3043a173ff17d66e9317976f8fa11b86a35bf7a21d6dd069f5d1060ef38d3773f5ebf153b7d8cfff637f774",
       "key_hex": "f52d6138cdb53591392d4f476e783aa75fe58430aa8f5428bf029240faa88c1b"
      },
      {
       "index": 8,
       "password_text": "",
       "password_hex": "",
       "idSymmetric_text": "",
       "idSymmetric_hex": "",
       "pw_scalar_dec": "5903805652715255267876771601091460535270217721801767442107988230147766983311",
       "pw_scalar_le32_hex": "8f9a0740eed9b9410a9624867bf3927f2bb0ace55dd20d8a55482865826f0d0d",
       "side1": {
        "entropy_hex": "8adb290ae3ed147596f6c8fcf162d89ae646e0805d8248aafeed3db37ecd467697d84fc6746c6768634f39391ee2fac92cb97be862530c1a7cece6c5d5c5d722",
        "scalar_dec": "5462448624550954785050410416105175424058748331904492082772621072395627364883",
        "scalar_le32_hex": "1382fb25b1358b00fc7f5b2656fc5fe1b2b86bcb7f9cf5621ff1275ce8a2130c",
        "X_hex": "f05ba769b777636a526b6beb53c225aa323440e51c91c690f1fd1e8aa2e24b2f",
        "msg_out_hex": "5334cfcad86702dd580a75c7e37e2dcf8009dd731f74020a4ea6371a5269d84436"
       },
       "side2": {
        "entropy_hex": "a1ca195bc451bc083a4d3ab73def6363021b8aa4f87cda29ec0c2e5a0273abbf2cae7d5f76aa73d5597c09fb0cb0d6d9bfaa851c723a919b941b3a507782cb92",
        "scalar_dec": "2653265292580669273646412464195122701799489571636965288065066686486142918991",
        "scalar_le32_hex": "4f2142775047f787461e1a78105b67308769a20598de0870b4452c6de7b1dd05",
        "X_hex": "684641992fd9f1e78262a1632c6a5dddbbe013ef093f3087bb967792e1aef60d",
        "msg_out_hex": "5323eb943e37040d9568a9bdc9cbe32ab1984e08c9f03f195961d47100d7e17994"
       },
       "K_hex": "698be39f44635ce0c7588944a2c1d93487284e43f8d8cc3fa2495c330e6cd494",
       "transcript_hex": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85523eb943e37040d9568a9bdc9cbe32ab1984e08c9f03f195961d47100d7e1799434cfcad86702dd580a75c7e37e2dcf8009dd731f74020a4ea6371a5269d84436698be39f44635ce0c7588944a2c1d93487284e43f8d8cc3fa2495c330e6cd494",
       "key_hex": "fc98b138d4ee548c419deafdffe08c59bd3825362feff4739b59fc3831440c54"
      },
      {
       "index": 10,
       "password_text": "5-sceptic-flagpole-waffle",
       "password_hex": "352d736365707469632d666c6167706f6c652d776166666c65",
       "idSymmetric_text": "lothar.com/wormhole/ssh-add",
       "idSymmetric_hex": "6c6f746861722e636f6d2f776f726d686f6c652f7373682d616464",
       "pw_scalar_dec": "4090780821084795954495969835701240341322766106836083585039340503599249172245",
       "pw_scalar_le32_hex": "1527d9bc3bf2d6de2171d88c60e50c289f2298161585287a1763aad3c54c0b09",
       "side1": {
        "entropy_hex": "8d24242a7b4993e84e0bde000474ec1586330979840e2b18385ed34a21738db967fa4f91b105b1849f4cd3a3c4612ab6c0b2bdbe94a0ee050e0496847d9fad75",
        "scalar_dec": "1694505653375485311636031268420366605599344386455758840644395592355424947482",
        "scalar_le32_hex": "1acd86dfc91178b91eb11f1115d443b669e6409186d919ca1e2c33eb630ebf03",
        "X_hex": "96e6681adab72947d209743be5bf9b058404920b6b34ca03e0aeb0c5c632497a",
        "msg_out_hex": "5342e7f04d4cd244d6841e0f65a710edd2c191c6a5a0480b60286eced5e3219f96"
       },
       "side2": {
        "entropy_hex": "ece934859dbed4d6e76fad7873e01a3af831b36ab5fc8af2712cacc0d566165388910db43255f7aedb0dff5589cb04e8721f9d83708819dd099d9f32f636c407",
        "scalar_dec": "4580099888138588994045245870897617994213011627031005032704235748140779990079",
        "scalar_le32_hex": "3f6ca67ff4317985dbba5fe12935f547d6c3747750e5cf418bb62ac2a23e200a",
        "X_hex": "672016a0d83ee870164fbe2eb2ffe08513b47ab6e758b340591a9da39c7cea39",
        "msg_out_hex": "539262b21e2e1d3cd3934f6530b3980c9fbd17f7de7f0098d076fd885015dc1482"
       },
       "K_hex": "a1121a60417bc382fe94f15fc43782801d4942a8695d857165432c8da4cdd201",
       "transcript_hex": "c1aade20de1faf80a7979e9a619195203d9e1723ee280cd021b919705aeb43763abd571bc6caff3110afe0d5e1e57e31cd48b19a13888c276925574f1093d47e42e7f04d4cd244d6841e0f65a710edd2c191c6a5a0480b60286eced5e3219f969262b21e2e1d3cd3934f6530b3980c9fbd17f7de7f0098d076fd885015dc1482a1121a60417bc382fe94f15fc43782801d4942a8695d857165432c8da4cdd201",
       "key_hex": "f2e72b9b4c3a0d7b610b1ada9e64211e4fd778625e8750543eddf7957c7cb5ac"
      },
      {
       "index": 13,
       "password_text": "8-cafe\u0301-nai\u0308ve",
       "password_hex": "382d636166c3a92d6e61c3af7665",
       "idSymmetric_text": "eleven.example/invite-v1",
       "idSymmetric_hex": "656c6576656e2e6578616d706c652f696e766974652d7631",
       "pw_scalar_dec": "5135577382100653202733989388818410388216360694868851022981968739183301787477",
       "pw_scalar_le32_hex": "557fa87ba373394dd1493ce31b9b5963c632d52ad19026521c19542140a25a0b",
       "side1": {
        "entropy_hex": "42fbcb6d7ca828b510d4dff3aaf14b65ef012b1f399f1da7dffbed1d6b09761629305e721c75d4e073b46bbc5c378413bab65053b21a85a3ad873454201013ff",
        "scalar_dec": "4738575204837294992382589508640836471194869794111615753343862377430515472911",
        "scalar_le32_hex": "0f5acc32d0cf9f36cbede238e59ca539f1cb1296696b83ec93ffe8f342f0790a",
        "X_hex": "73314f3992bc0c18bc741806e3cf2c4ea555a86a5bda3b2c333ae06314199e6b",
        "msg_out_hex": "53f85d9dd184f9568c43ba992c672f99ee4b7eb1fed38e5d879a13e73de78b1a71"
       },
       "side2": {
        "entropy_hex": "c03cf387ef6568c8cd2ff38c6c9a047f6f882d2366ec2fbd1e937040e742a74edd70c78fd7bae6b81d70ed0d2ab0f1d31931935754c66b32142ea9d22d52bf69",
        "scalar_dec": "4801251158757619757809694907771204488607158264113687309930606523745983728987",
        "scalar_le32_hex": "5b0d9b72e1f7fcba44ac2a325378a8bb9f62f5d1a1053e6fc505644a6f699d0a",
        "X_hex": "663d03b886eb1d1753156b200f1b80c260f6e0197c05f88b49228b8aca6c280f",
        "msg_out_hex": "53cf7a8780a2c2e0a309be7927f80707ff744d018b6a6cf0364e35f45e9db3808d"
       },
       "K_hex": "0526ddab447763f45b75a982f7b0f6a0e88c46c95b53eca1a60367c786a0c59e",
       "transcript_hex": "f741a80a43bb5c1422f0475333ed4e13b9e23f891bc7c2fe21b37a842ad9a10cebf7915d7fdf15cbe2a08f8e8549a80207401fd705dc8d6144c84988a0d1ee87cf7a8780a2c2e0a309be7927f80707ff744d018b6a6cf0364e35f45e9db3808df85d9dd184f9568c43ba992c672f99ee4b7eb1fed38e5d879a13e73de78b1a710526ddab447763f45b75a982f7b0f6a0e88c46c95b53eca1a60367c786a0c59e",
       "key_hex": "adf757575a63d42906267bdc07ddd9bc5e3a1b53f834f81da46e8f6602480abe"
      },
      {
       "index": 15,
       "password_text": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
       "password_hex": "7878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878",
       "idSymmetric_text": "eleven.example/invite-v1",
       "idSymmetric_hex": "656c6576656e2e6578616d706c652f696e766974652d7631",
       "pw_scalar_dec": "3821412831304706231705743485011005500268195357897835713541918406728568579276",
       "pw_scalar_le32_hex": "cca49cd45597585e661c247410a34a325044a55290a4587ede6a2bc8cfd77208",
       "side1": {
        "entropy_hex": "bced9c80f06635fc506ccc9c68e8d56df579c01bc3a2c061dd36931831d1ab3f6167324c3b13d4a3eea50ff2b445c40abf022d9a1abc86679ddb86dad3bccc57",
        "scalar_dec": "5811965330058917252506581086614710251461333515225227332328263262908419904719",
        "scalar_le32_hex": "cf948705d28c3e79cec82b373e6e0137e276e1d0233f5d0983e7947faf74d90c",
        "X_hex": "c3a85b385c1250cff7d451814bd00b16e99bf0a5ec679f2597d02b9b58cda08d",
        "msg_out_hex": "5339166cc5974df5166f06721d66c6f99f0812cc431d4618b037ebf9bb92c23547"
       },
       "side2": {
        "entropy_hex": "231cc24cc3e78df2cafbb6b287706cd1edde324debd8f3c967fd8c1ffdb1c740608d1f17f6d6086ab97a34c3f96ba28760b22bfed69ba5bd446d695d25f37ed2",
        "scalar_dec": "1392629091422568280837132619283327889015020626910891414159790218653857215390",
        "scalar_le32_hex": "9ef3e756d9b69f3ad807ccf593b3592dfc30f5913c9db7864ea451ea3b331403",
        "X_hex": "00f33e61c13cd1dd5de62426375b4fa49262a536ff16ae37dfaa112baf57fbbf",
        "msg_out_hex": "53183d7d51bce0d5465a414cb337fef8c73b417c27e7f6625659f2ddef8ee1c12f"
       },
       "K_hex": "bde6ffab92b202040de5b1010ad6cb8ff18dedc232b2792e5cf98a2c837f7f9c",
       "transcript_hex": "aa20c23e3201834050679e1d88941b9a6fed0557c9a705cb2c315e2e63fd486debf7915d7fdf15cbe2a08f8e8549a80207401fd705dc8d6144c84988a0d1ee87183d7d51bce0d5465a414cb337fef8c73b417c27e7f6625659f2ddef8ee1c12f39166cc5974df5166f06721d66c6f99f0812cc431d4618b037ebf9bb92c23547bde6ffab92b202040de5b1010ad6cb8ff18dedc232b2792e5cf98a2c837f7f9c",
       "key_hex": "1547e1ccfa3c3dd447ef0ba2368230f4df4a43a6ce2b112a83fc3a792fabe145"
      },
      {
       "index": 18,
       "password_text": "2-spaces are bytes too",
       "password_hex": "322d7370616365732061726520627974657320746f6f",
       "idSymmetric_text": "id with spaces",
       "idSymmetric_hex": "6964207769746820737061636573",
       "pw_scalar_dec": "1387307766963271141933293970624295879494353816653317423532401935533366762589",
       "pw_scalar_le32_hex": "5ddc1eccf9347c9b180108d9b81fe54a8ab94e53dfd87c4c14226b0539301103",
       "side1": {
        "entropy_hex": "a796fdf19575eb2346e8fcaff8d76ea6441b6c0c9b13af6114b66e7aa998f8c29307d75fa0784f45f6600918cff961c9bc26a9f486097ef74cc169c525cc0137",
        "scalar_dec": "2123538535024453875517572479450692305220091928071965639166284836721203809142",
        "scalar_le32_hex": "760b8f9b7c55dcde621e8589beab9becb1069d5d76a06a0f5d640ef455e1b104",
        "X_hex": "0788c3921fa58c5d4e62ff105834f1d1e4c3905e142beb71f6ceff7361b93e41",
        "msg_out_hex": "5335c7840b54ff0176eea98e18dba58cd64ea44ed6897912682570560c4dd23bb8"
       },
       "side2": {
        "entropy_hex": "76c2dd1708b10c29b9f8fc753815792d0c1560e5ef0e355c89cb2b8b462453f290fef8a15981dcc9c164155329c3a7d9f812bb044c9d99419cef4f2fed91e101",
        "scalar_dec": "2101410569878988247834580437715073495794328869185952585658779751931514670367",
        "scalar_le32_hex": "1f4d83b5fb6c0e4011e70537b03b37868d887fddcaaaec24380ff11b325ba504",
        "X_hex": "7548bc61889909570dbd1cc30684e9a6c9e86811b6b129df724e8c74d364a771",
        "msg_out_hex": "53598434d3e933c5b943d6caaa685c0e865d8e64e80080a6f8f4fe112e31900fd3"
       },
       "K_hex": "f819dbd00d086154de8e039ad1ccf015da2465ec8a6ca47a4639aea879af6891",
       "transcript_hex": "df50a307894316b407202986240055c5853f753b8da26be799b7d0d88cc5e004bd1e442c96c6045c725994464547f529e9b7d77de2919ab0c0e27a3b7ebeabfa35c7840b54ff0176eea98e18dba58cd64ea44ed6897912682570560c4dd23bb8598434d3e933c5b943d6caaa685c0e865d8e64e80080a6f8f4fe112e31900fd3f819dbd00d086154de8e039ad1ccf015da2465ec8a6ca47a4639aea879af6891",
       "key_hex": "f8076b6761198c791f09507e2cc554e7d29e1e56e0410b9a9588f96c28381089"
      }
     ],
     "wormhole_kdf_vectors": {
      "master_key_hex": "588ba9eef353778b074413a0140205d90d7479e36e0dd4ee35bb729d26131ef1",
      "derive_key": [
       {
        "purpose": "wormhole:verifier",
        "out_hex": "5dc3da0c2cc7975c3b5e266aeab1e9c792c8bcbe3a28595b7ba5a8c756b06264"
       },
       {
        "purpose": "purpose1",
        "out_hex": "835b5df80ce9ca46908e8524fb308649122cfbcefbeaa7e65061c6ef08ee1b2a"
       },
       {
        "purpose": "lothar.com/wormhole/text-or-file-xfer/transit-key",
        "out_hex": "a7d95312e88d9096043efe939e4f0059b76ed41887fc6b80ae242b9fcd65647b"
       }
      ],
      "derive_phase_key": [
       {
        "side": "side1",
        "phase": "pake",
        "out_hex": "556d55ca1af174fbc1f9318872659225ddaa48e168ddb7945a9757e76ed75f4f"
       },
       {
        "side": "side1",
        "phase": "version",
        "out_hex": "6518fda78698d83682375bd19b7c6fcecdacb2422d7bb0555cb73a944891c066"
       },
       {
        "side": "side1",
        "phase": "0",
        "out_hex": "4915eece0949031f02bdd14158dc9b17a3991759405a0687b1e0acccb7ab3ce1"
       },
       {
        "side": "side1",
        "phase": "1",
        "out_hex": "4cd9053d7224f311918f7075526e3b1fe29f79f5a2c8e15a954d0068d734cb53"
       },
       {
        "side": "side1",
        "phase": "phase1",
        "out_hex": "3af6a61d1a111225cc8968c6ca6265efe892065c3ab46de79dda21306b062990"
       },
       {
        "side": "side2",
        "phase": "pake",
        "out_hex": "25ac7665da5a3ee991a5b42a92a891a15b3387a32a702a8b2666ca96f80706b4"
       },
       {
        "side": "side2",
        "phase": "version",
        "out_hex": "3a02e1e240d7924fce14d17c6732e125f74a8d252a91a68b181ab330e0714cd8"
       },
       {
        "side": "side2",
        "phase": "0",
        "out_hex": "881cec7207fdb069d5e4bd4063ad5db26d56ed9f11da3e3e3824d8e3c4df4fa1"
       },
       {
        "side": "side2",
        "phase": "1",
        "out_hex": "58e6604126c4ae025a24e466fe76990ae6db462bd570b3d3b6dd58a0028f75c7"
       },
       {
        "side": "side2",
        "phase": "phase1",
        "out_hex": "a306627b436ec23bdae3af8fa90c9ac927780d86be1831003e7f617c518ea689"
       },
       {
        "side": "9bd6d4e9f0",
        "phase": "pake",
        "out_hex": "09abed3f6d7a824fc1d79828de77bd6d434cdcd56df9bb1df2a13ba4dcee672e"
       },
       {
        "side": "9bd6d4e9f0",
        "phase": "version",
        "out_hex": "15cb6245e5671bb4d1c47f26698f3ef4afcb864dcb5e8c13f8423d54978e724e"
       },
       {
        "side": "9bd6d4e9f0",
        "phase": "0",
        "out_hex": "de8b7716c36288c13a5be222dfe7da943562960043aca02592a0d9e28b8d5d36"
       },
       {
        "side": "9bd6d4e9f0",
        "phase": "1",
        "out_hex": "6648883c28a69f4a8818100977d1bf699249fe3fe39ed296f6b661d0ca4fdb28"
       },
       {
        "side": "9bd6d4e9f0",
        "phase": "phase1",
        "out_hex": "2609ba24fd6628c335afac28ae4976d37cb1f8573ca88ce66e7a2ebcd8d47c03"
       }
      ],
      "secretbox": [
       {
        "side": "9bd6d4e9f0",
        "phase": "version",
        "phase_key_hex": "15cb6245e5671bb4d1c47f26698f3ef4afcb864dcb5e8c13f8423d54978e724e",
        "nonce_hex": "000102030405060708090a0b0c0d0e0f1011121314151617",
        "plaintext_hex": "7b226170705f76657273696f6e73223a207b7d7d",
        "body_hex(nonce||tag||ciphertext)": "000102030405060708090a0b0c0d0e0f10111213141516177a548d8c6544f14d76c2f4709ff3f69a4837aa59318ad19d5d02136a0e3d0e31ebd570bf"
       },
       {
        "side": "9bd6d4e9f0",
        "phase": "0",
        "phase_key_hex": "de8b7716c36288c13a5be222dfe7da943562960043aca02592a0d9e28b8d5d36",
        "nonce_hex": "000102030405060708090a0b0c0d0e0f1011121314151617",
        "plaintext_hex": "7b226f66666572223a207b226d657373616765223a20226869227d7d",
        "body_hex(nonce||tag||ciphertext)": "000102030405060708090a0b0c0d0e0f1011121314151617ab79b6fbf443fc2a2770611fe5759988b72bee1a007e4a7c4c808b5efc821a000b674e2a566a3d9947fb038f"
       }
      ]
     }
    }
    """#
